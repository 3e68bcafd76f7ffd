// protobuf-es encodes each string field of a binary message with TextEncoder.encode, and in Node 20
// every such call allocates its own ArrayBuffer: 1–3 µs a string on the benchmark machine. A GetRoom
// reply took 20 µs to encode (6 µs with Buffer), which made binary replies slower than JSON ones.
// Buffer.from takes small strings from Node's shared pool and writes the same bytes (a lone
// surrogate becomes U+FFFD in both). configureTextEncoding is protobuf-es's hook for this.
import { configureTextEncoding, getTextEncoding } from '@bufbuild/protobuf/wire'

/** protobuf-es keeps the setting process-wide (on globalThis); calling this again changes nothing. */
export function encodeProtobufStringsWithBuffer (): void {
  configureTextEncoding({ ...getTextEncoding(), encodeUtf8: (text) => Buffer.from(text, 'utf8') })
}
