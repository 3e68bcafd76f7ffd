// Headless Chromium (Debian's /usr/bin/chromium, driven by puppeteer-core: no browser download), for
// what only a real browser shows. A page is opened on the server's own origin, so its fetches are
// same-origin and carry the session cookie set here.
import { existsSync } from 'node:fs'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import type { TriesSpec, TryOutcome } from './fetch-tries.js'

export const CHROMIUM = '/usr/bin/chromium'

/** Why the browser tests cannot run here, or undefined when they can. */
export function browserMissing (): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install -y chromium)`
}

export async function launchBrowser (): Promise<Browser> {
  return await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check']
  })
}

/** A page on `origin` (its /health), with `app_session` set when a cookie is given. */
export async function pageOn (browser: Browser, origin: string, cookie?: string): Promise<Page> {
  const context = await browser.createBrowserContext()
  const page = await context.newPage()
  if (cookie !== undefined) await context.setCookie({ name: 'app_session', value: cookie, domain: new URL(origin).hostname, path: '/' })
  await page.goto(`${origin}/health`)
  return page
}

/** The same tries as fetch-tries.ts, made by the page's own fetch (a network error is "TypeError: Failed to fetch"). */
export async function browserTries (page: Page, spec: TriesSpec): Promise<TryOutcome[]> {
  return await page.evaluate(async (spec: TriesSpec) => {
    const outcomes: Array<{ status: number, body: string } | { error: string }> = []
    const header = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89]
    for (let i = 0; i < spec.tries; i++) {
      let body: FormData | string | undefined
      const headers: Record<string, string> = { ...spec.headers }
      if (spec.form !== undefined) {
        const bytes = new Uint8Array(spec.form.fileBytes)
        bytes.set(header.slice(0, Math.min(header.length, bytes.length)))
        body = new FormData()
        for (const [name, value] of spec.form.fields) body.append(name, value)
        body.append('file', new Blob([bytes], { type: 'image/png' }), 'a.png')
      } else if (spec.jsonBytes !== undefined) {
        body = JSON.stringify({ name: 'x'.repeat(spec.jsonBytes) })
        headers['content-type'] = 'application/json'
      }
      try {
        const res = await fetch(spec.url, { method: 'POST', headers, body, credentials: 'same-origin' })
        outcomes.push({ status: res.status, body: await res.text() })
      } catch (error) {
        outcomes.push({ error: String(error) })
      }
    }
    return outcomes
  }, spec)
}
