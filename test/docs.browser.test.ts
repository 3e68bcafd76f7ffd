// /docs in a real browser (issue 39.3): headless Chromium opens the docs at a name that is not
// loopback (`internal-host`, mapped to 127.0.0.1 by the browser's own resolver rules), over plain HTTP
// and over HTTPS. The operations list renders, no request leaves for another host (no CDN, and no
// `upgrade-insecure-requests` turning the page's own assets into https URLs that fail), and the
// page is titled after the service. Skipped, saying why, where Chromium is not installed
// (Debian's `chromium` package: `apt-get install -y chromium`).
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import puppeteer, { type Browser } from 'puppeteer-core'
import { API_TITLE } from '../src/rest/openapi.js'
import { startApp, type TestApp } from './helpers/app.js'
import { temporaryDir } from './helpers/temp-dirs.js'

const CHROMIUM = '/usr/bin/chromium'
const HOST = 'internal-host'

if (!existsSync(CHROMIUM)) {
  t.test('/docs in Chromium', { skip: `Chromium is not installed at ${CHROMIUM} (apt-get install -y chromium)` }, async () => {})
} else {
  const dir = temporaryDir('docs-tls-')
  const cert = join(dir, 'cert.pem')
  const key = join(dir, 'key.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${HOST}`], { stdio: 'ignore' })

  const servers: Record<'http' | 'https', TestApp> = {
    http: await startApp({ EXPOSE: 'internal' }),
    https: await startApp({ EXPOSE: 'internal', TLS_CERT_FILE: cert, TLS_KEY_FILE: key })
  }
  t.teardown(async () => { await Promise.all(Object.values(servers).map(async (server) => { await server.close() })) })

  const browser: Browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--headless=new', `--host-resolver-rules=MAP ${HOST} 127.0.0.1`, '--ignore-certificate-errors']
  })
  t.teardown(async () => { await browser.close() })

  for (const scheme of ['http', 'https'] as const) {
    t.test(`/docs at ${scheme}://${HOST}: the operations render, every request stays on the host, the title names the service`, async (t) => {
      const port = new URL(servers[scheme].url).port
      const origin = `${scheme}://${HOST}:${port}`
      const page = await browser.newPage()
      t.teardown(async () => { await page.close() })
      const requested: string[] = []
      const failed: string[] = []
      page.on('request', (request) => { requested.push(request.url()) })
      page.on('requestfailed', (request) => { failed.push(`${request.url()}: ${request.failure()?.errorText ?? '?'}`) })

      const answer = await page.goto(`${origin}/docs/`, { waitUntil: 'load' })
      t.equal(answer?.status(), 200)
      t.notMatch(answer?.headers()['content-security-policy'] ?? '', /upgrade-insecure-requests/, 'no upgrade of the page\'s own assets to https')
      await page.waitForSelector('.opblock', { timeout: 30_000 })
      const operations = await page.$$eval('.opblock', (blocks) => blocks.length)
      t.ok(operations >= 90, `the operations list renders (${operations} operations)`)
      t.equal(await page.title(), API_TITLE, 'the page is titled after the service')
      t.same(failed, [], 'no request failed')
      t.same(requested.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')), [], `every request went to ${origin}`)
      t.ok(requested.some((url) => url.endsWith('/swagger-ui-bundle.js')), 'the UI\'s script came from the service itself')
    })
  }
}
