// What operators are handed (issue 39 items 7 and 8): the Grafana dashboard (docs/grafana/) and the
// Prometheus alert rules (docs/prometheus/) name only metrics a real scrape of the app serves, with
// labels those metrics carry; the rules pass `promtool check rules`, and a real scrape passes
// `promtool check metrics` (Debian's `prometheus` package; .ci/run installs it, skipped without it).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { startApp } from './helpers/app.js'
import { parsePrometheusText, type Family } from './helpers/prometheus-text.js'

const DASHBOARD = 'docs/grafana/canvas-service.json'
const RULES = 'docs/prometheus/alerts.yml'

const s = await startApp({ METRICS_PORT: '0' })
t.teardown(s.close)
// A few requests, so the request families have series.
for (const path of ['/health', '/api/auth/me', '/api/nowhere']) await fetch(`${s.url}${path}`)
await fetch(`${s.url}/rpc/app.auth.v1.AuthService/Ping`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
const scrape = await (await fetch(`http://127.0.0.1:${s.app.metricsPort()!}/metrics`)).text()
const families = parsePrometheusText(scrape)

interface Dashboard { panels: Array<{ title: string, targets?: Array<{ expr: string }> }>, templating: { list: Array<{ query?: unknown }> } }
interface Rules { groups: Array<{ rules: Array<{ alert: string, expr: string }> }> }

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard
const rules = parse(readFileSync(RULES, 'utf8')) as Rules
const expressions: Array<{ where: string, expr: string }> = [
  ...dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ where: `panel "${panel.title}"`, expr: target.expr }))),
  ...rules.groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })))
]

/** The family a sample name belongs to (a histogram's _bucket, _sum and _count are its own). */
function familyOf (name: string): Family | undefined {
  return families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/, ''))
}

/** Labels Prometheus adds at scrape time, not in the exposition. */
const TARGET_LABELS = new Set(['instance', 'job'])

t.test('every metric the dashboard and the rules name is in a real scrape, with the labels they select on', async (t) => {
  t.ok(expressions.length >= 20, `${expressions.length} expressions read`)
  const named = new Set<string>()
  for (const { where, expr } of expressions) {
    const selectors = [...expr.matchAll(/\b((?:canvas|process|nodejs)_[a-zA-Z0-9_]+)(?:\{([^}]*)\})?/g)]
    t.ok(selectors.length > 0, `${where} names a metric`)
    for (const [, name = '', labelText = ''] of selectors) {
      named.add(name)
      const family = familyOf(name)
      if (family === undefined) { t.fail(`${where}: ${name} is not in the scrape`); continue }
      const served = new Set(family.samples.flatMap((sample) => Object.keys(sample.labels)))
      for (const [, label = ''] of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)) {
        if (TARGET_LABELS.has(label) || family.samples.length === 0) continue
        t.ok(served.has(label), `${where}: ${name} carries the label ${label}`)
      }
    }
  }
  for (const must of ['canvas_requests_total', 'canvas_request_duration_seconds_bucket', 'canvas_rate_limit_decisions_total', 'canvas_event_streams_open', 'canvas_event_delivery_lag_seconds_bucket', 'canvas_event_outbox_held_back_seconds', 'canvas_db_pool_connections', 'canvas_compute_tasks', 'canvas_upload_bytes_total', 'canvas_health_status']) {
    t.ok(named.has(must), `the dashboard or the rules use ${must}`)
  }
})

t.test('the health state set: one status is 1 for the instance and for each part', async (t) => {
  const health = families.get('canvas_health_status')
  const instance = health?.samples.filter((sample) => sample.labels.part === 'instance') ?? []
  t.same(instance.filter((sample) => sample.value === 1).map((sample) => sample.labels.status), ['healthy'])
  t.same(new Set(instance.map((sample) => sample.labels.status)), new Set(['healthy', 'degraded', 'unhealthy', 'draining']))
  t.ok(health?.samples.some((sample) => sample.labels.part === 'database' && sample.labels.status === 'healthy' && sample.value === 1), 'the database part')
})

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0 ? undefined : 'promtool is not installed (Debian: apt-get install prometheus)'

t.test('promtool: the rules check, and a real scrape is clean', { skip: promtool }, async (t) => {
  const checkedRules = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' })
  t.equal(checkedRules.status, 0, `promtool check rules: ${checkedRules.stdout}${checkedRules.stderr}`)
  const checkedMetrics = spawnSync('promtool', ['check', 'metrics'], { input: scrape, encoding: 'utf8' })
  t.equal(checkedMetrics.status, 0, 'promtool check metrics exits 0')
  t.equal(`${checkedMetrics.stdout}${checkedMetrics.stderr}`.trim(), '', 'with no complaint (no gauge named _total)')
})
