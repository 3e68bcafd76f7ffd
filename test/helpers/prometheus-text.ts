// A strict reader of the Prometheus text exposition format (0.0.4), enough for the tests: every
// sample line `name{label="value",…} number` with its family from `# TYPE`. (parse-prometheus-text-format
// was tried: it merges a labelled histogram's series into one.) A line that does not parse throws.

export interface Sample { name: string, labels: Record<string, string>, value: number }
export interface Family { name: string, type: string, samples: Sample[] }

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g

export function parsePrometheusText (text: string): Map<string, Family> {
  const families = new Map<string, Family>()
  let current: Family | undefined
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('# HELP ')) continue
    if (line.startsWith('# TYPE ')) {
      const [name = '', type = ''] = line.slice(7).split(' ')
      current = { name, type, samples: [] }
      families.set(name, current)
      continue
    }
    const match = SAMPLE.exec(line)
    if (match === null || current === undefined) throw new Error(`not a sample line: ${line}`)
    const [, name = '', labelText = '', value = ''] = match
    if (name !== current.name && !['_bucket', '_sum', '_count', '_total', '_created'].some((suffix) => name === current!.name + suffix)) throw new Error(`${name} outside its family ${current.name}`)
    const labels: Record<string, string> = {}
    for (const [, key = '', raw = ''] of labelText.matchAll(LABEL)) labels[key] = raw.replace(/\\(.)/g, (_, c: string) => c === 'n' ? '\n' : c)
    const number = value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value)
    // Prometheus reads values with Go's ParseFloat, which takes NaN in any case (prom-client writes `Nan`).
    if (Number.isNaN(number) && value.toLowerCase() !== 'nan') throw new Error(`not a number: ${line}`)
    current.samples.push({ name, labels, value: number })
  }
  return families
}
