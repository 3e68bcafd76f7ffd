// Reads an OTLP/HTTP protobuf trace export (ExportTraceServiceRequest, opentelemetry-proto
// trace/v1 and common/v1) back into spans, with protobuf-es's wire reader: what a collector would
// see, field by field. Only the fields the tests read are kept; the rest are skipped.
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire'

export type AttributeValue = string | number | boolean | undefined

export interface ExportedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** SpanKind: 1 internal, 2 server, 3 client… */
  kind: number
  attributes: Record<string, AttributeValue>
  /** StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number, message: string }
  /** The attributes of the resource the span came with. */
  resource: Record<string, AttributeValue>
}

/** Calls `field` for each field of the message in `bytes`; it returns false to have it skipped. */
function fields (bytes: Uint8Array, field: (reader: BinaryReader, no: number, wireType: WireType) => boolean): void {
  const reader = new BinaryReader(bytes)
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag()
    if (!field(reader, no, wireType)) reader.skip(wireType)
  }
}

function anyValue (bytes: Uint8Array): AttributeValue {
  let value: AttributeValue
  fields(bytes, (reader, no) => {
    if (no === 1) value = reader.string()
    else if (no === 2) value = reader.bool()
    else if (no === 3) value = Number(reader.int64())
    else if (no === 4) value = reader.double()
    else return false
    return true
  })
  return value
}

function keyValue (bytes: Uint8Array, into: Record<string, AttributeValue>): void {
  let key = ''
  let value: AttributeValue
  fields(bytes, (reader, no) => {
    if (no === 1) key = reader.string()
    else if (no === 2) value = anyValue(reader.bytes())
    else return false
    return true
  })
  into[key] = value
}

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')

function span (bytes: Uint8Array, resource: Record<string, AttributeValue>): ExportedSpan {
  const out: ExportedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, attributes: {}, status: { code: 0, message: '' }, resource }
  fields(bytes, (reader, no) => {
    if (no === 1) out.traceId = hex(reader.bytes())
    else if (no === 2) out.spanId = hex(reader.bytes())
    else if (no === 4) out.parentSpanId = hex(reader.bytes())
    else if (no === 5) out.name = reader.string()
    else if (no === 6) out.kind = reader.int32()
    else if (no === 9) keyValue(reader.bytes(), out.attributes)
    else if (no === 15) {
      fields(reader.bytes(), (status, field) => {
        if (field === 2) out.status.message = status.string()
        else if (field === 3) out.status.code = status.int32()
        else return false
        return true
      })
    } else return false
    return true
  })
  return out
}

/** Every span of one export request body. */
export function decodeTraceExport (body: Uint8Array): ExportedSpan[] {
  const spans: ExportedSpan[] = []
  fields(body, (reader, no) => {
    if (no !== 1) return false
    // ResourceSpans: its resource (1), then its scope spans (2), each holding spans (2).
    const resource: Record<string, AttributeValue> = {}
    const scopes: Uint8Array[] = []
    fields(reader.bytes(), (inner, field) => {
      if (field === 1) fields(inner.bytes(), (r, f) => { if (f !== 1) return false; keyValue(r.bytes(), resource); return true })
      else if (field === 2) scopes.push(inner.bytes())
      else return false
      return true
    })
    for (const scope of scopes) fields(scope, (r, f) => { if (f !== 2) return false; spans.push(span(r.bytes(), resource)); return true })
    return true
  })
  return spans
}
