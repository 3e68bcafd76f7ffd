# Multi-stage build: dependencies and generated code in a build stage, a slim non-root runtime.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json buf.yaml buf.gen.yaml ./
COPY proto ./proto
# postinstall runs `buf generate` (offline) into src/gen.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npx buf generate && npx tsc --noEmit && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
WORKDIR /app
RUN mkdir -p /data && chown node:node /data
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/src ./src
COPY --from=build --chown=node:node /app/package.json ./
USER node
EXPOSE 8080
VOLUME ["/data"]
CMD ["node", "--import=tsx", "src/server.ts"]
