# Multi-stage build: dependencies and generated code in a build stage, a slim non-root runtime, both
# on Node 26, the major that CI, tests and benchmarks run on (package.json installs it as a
# devDependency, engines >= 26).
FROM node:26-slim AS build
WORKDIR /app
COPY package.json package-lock.json buf.yaml buf.gen.yaml ./
COPY proto ./proto
# postinstall runs `buf generate` (offline) into src/gen.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY migrations ./migrations
# src/ and migrations/ compiled to plain JavaScript in dist/src and dist/migrations (src/gen came from
# npm ci's postinstall above and is not in the build context): production runs no TypeScript loader.
RUN npm run build && npm prune --omit=dev

FROM node:26-slim
# CV parser processes run under a memory limit set with util-linux's prlimit (src/compute/README.md):
# present in Debian's essential set, checked here so an image without it fails to build, not to parse.
RUN prlimit --version
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATA_DIR=/data
WORKDIR /app
RUN mkdir -p /data && chown node:node /data
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/package.json ./
USER node
EXPOSE 8080
VOLUME ["/data"]
# tracing-preload starts OpenTelemetry before the app loads, only when OTEL_EXPORTER_OTLP_ENDPOINT is set.
CMD ["node", "--enable-source-maps", "--import", "./dist/src/tracing-preload.js", "dist/src/server.js"]
