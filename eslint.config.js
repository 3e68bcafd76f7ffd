// One linter and formatter for the project: neostandard (JavaScript Standard Style, with
// typescript-eslint for TypeScript). `npm run lint` checks with zero warnings allowed, `npm run
// format` fixes what it can. Generated code (src/gen) and build output are not ours to style.
import neostandard, { plugins } from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['src/gen/**', 'clients/web/api.d.ts', 'dist/**', 'coverage/**', '.tap/**', 'data/**'] }),
  {
    plugins: { '@typescript-eslint': plugins['typescript-eslint'].plugin },
    rules: {
      // `void promise` marks a promise deliberately not awaited (Fastify's reply methods return one).
      'no-void': ['error', { allowAsStatement: true }],
      // Types come from one source each (TypeBox, protobuf, Kysely); `any` would sever them.
      '@typescript-eslint/no-explicit-any': 'error'
    }
  }
]
