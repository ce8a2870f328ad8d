// A small schema-driven proto3 codec with Go's semantics (devshard-protocol.md §2.3, §10.1):
// - encode: fields in ascending number, defaults omitted, present sub-messages always written, then
//   the unknown fields kept from decoding, exactly where Go's proto.Marshal puts them;
// - decode: unknown field numbers, and known numbers arriving with another wire type, are kept raw;
//   a repeated scalar occurrence overwrites, a repeated sub-message occurrence merges, a oneof member
//   replaces the other members; uint32 truncates and bool is "non-zero", as in protobuf-go; a string
//   that is not valid UTF-8 is an error (proto3).
// Re-encoding a decoded message therefore gives the bytes a Go peer signs and verifies.
import { concat, ProtoWriter, readFields } from '@gonka-gateway/chain';
import { DevshardError, DevshardErrorCode } from '../errors.js';

export type ScalarKind = 'uint64' | 'int64' | 'uint32' | 'bool' | 'string' | 'bytes' | 'enum';
export type FieldKind = ScalarKind | 'message' | 'repeated';

export interface FieldDef {
  readonly no: number;
  readonly key: string;
  readonly kind: FieldKind;
  /** Element schema of `message` and `repeated` fields. */
  readonly schema?: MessageSchema<object>;
  /** Member of the message's oneof (DevshardTx.tx): setting one member clears the others. */
  readonly oneof?: boolean;
}

export interface MessageSchema<T extends object> {
  readonly name: string;
  readonly fields: readonly FieldDef[];
  readonly byNumber: ReadonlyMap<number, FieldDef>;
  /** Type carrier only; never set. */
  readonly __type?: T;
}

/** Raw bytes of the fields a schema does not know, in arrival order (re-emitted after known fields). */
export interface WithUnknown {
  readonly unknown?: Uint8Array;
}

export function defineMessage<T extends object>(name: string, fields: readonly FieldDef[]): MessageSchema<T> {
  const byNumber = new Map<number, FieldDef>();
  let last = 0;
  for (const f of fields) {
    if (f.no <= last) throw new Error(`${name}: fields must be listed in ascending number`);
    last = f.no;
    byNumber.set(f.no, f);
  }
  return { name, fields, byNumber };
}

const WIRE_VARINT = 0;
const WIRE_LEN = 2;

function wireTypeOf(kind: FieldKind): number {
  return kind === 'string' || kind === 'bytes' || kind === 'message' || kind === 'repeated'
    ? WIRE_LEN
    : WIRE_VARINT;
}

/**
 * Per schema, built once on first use: a factory of the all-defaults message and an encoder. Both
 * are generated as straight-line code over the schema's constant keys (like protobuf.js), so every
 * message of one schema gets one object shape and each field read is a monomorphic property load;
 * a generic loop over `msg[def.key]` makes every load megamorphic (LoadIC in a profile).
 * The code is built only from the schema definitions in this package, never from input.
 */
interface Compiled {
  readonly defaults: () => Record<string, unknown>;
  readonly write: (w: ProtoWriter, msg: Record<string, unknown>) => void;
}

const compiledSchemas = new WeakMap<MessageSchema<object>, Compiled>();
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function compiled(schema: MessageSchema<object>): Compiled {
  let c = compiledSchemas.get(schema);
  if (c === undefined) {
    c = compile(schema);
    compiledSchemas.set(schema, c);
  }
  return c;
}

function defaultCode(def: FieldDef): string {
  switch (def.kind) {
    case 'uint64':
    case 'int64':
      return '0n';
    case 'uint32':
    case 'enum':
      return '0';
    case 'bool':
      return 'false';
    case 'string':
      return "''";
    case 'bytes':
      return 'new Uint8Array(0)';
    case 'repeated':
      return '[]';
    case 'message':
      return 'undefined';
  }
}

function writeCode(def: FieldDef, i: number): string {
  const v = `m.${def.key}`;
  switch (def.kind) {
    case 'uint64':
    case 'int64':
      return `w.uint64(${def.no}, ${v} ?? 0n);`;
    case 'uint32':
      return `w.uint32(${def.no}, ${v} ?? 0);`;
    case 'enum':
      // int32 enums are varints of the sign-extended 64-bit value.
      return `w.int64(${def.no}, BigInt(${v} ?? 0));`;
    case 'bool':
      return `w.bool(${def.no}, Boolean(${v}));`;
    case 'string':
      return `w.string(${def.no}, ${v} ?? '');`;
    case 'bytes':
      return `w.bytes(${def.no}, ${v});`;
    case 'message':
      return `{ const v = ${v}; if (v !== undefined && v !== null) nested(w, ${def.no}, subs[${i}], v); }`;
    case 'repeated':
      return `{ const v = ${v}; if (v !== undefined && v !== null) for (const item of v) nested(w, ${def.no}, subs[${i}], item); }`;
  }
}

function compile(schema: MessageSchema<object>): Compiled {
  for (const def of schema.fields) {
    if (!IDENTIFIER.test(def.key) || def.key === 'unknown' || !Number.isSafeInteger(def.no)) {
      throw new Error(`${schema.name}: field ${def.key} (${def.no}) cannot be compiled`);
    }
  }
  const subs = schema.fields.map((def) => def.schema);
  const makeDefaults = new Function(
    `return () => ({ ${schema.fields.map((def) => `${def.key}: ${defaultCode(def)}`).join(', ')} });`,
  )() as Compiled['defaults'];
  const write = new Function(
    'nested',
    'subs',
    `return (w, m) => {
      ${schema.fields.map(writeCode).join('\n      ')}
      const u = m.unknown;
      if (u instanceof Uint8Array && u.length > 0) w.raw(u);
    };`,
  )(writeNested, subs) as Compiled['write'];
  return { defaults: makeDefaults, write };
}

/** A present sub-message (or repeated element), written in place: tag, length, fields. */
function writeNested(w: ProtoWriter, no: number, schema: MessageSchema<object>, msg: object): void {
  const mark = w.beginMessage(no);
  compiled(schema).write(w, msg as Record<string, unknown>);
  w.endMessage(mark);
}

function defaults(schema: MessageSchema<object>): Record<string, unknown> {
  return compiled(schema).defaults();
}

/** A message with every field at its default, overridden by `fields`. */
export function createMessage<T extends object>(schema: MessageSchema<T>, fields: Partial<T>): T {
  return Object.assign(defaults(schema), fields) as T;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function mergeInto(schema: MessageSchema<object>, bytes: Uint8Array, out: Record<string, unknown>): void {
  let fields: ReturnType<typeof readFields>;
  try {
    fields = readFields(bytes);
  } catch (error) {
    throw new DevshardError(DevshardErrorCode.Malformed, `${schema.name}: ${(error as Error).message}`);
  }
  const unknown: Uint8Array[] = out.unknown instanceof Uint8Array ? [out.unknown] : [];
  for (const f of fields) {
    const def = schema.byNumber.get(f.field);
    if (!def || f.wireType !== wireTypeOf(def.kind)) {
      unknown.push(bytes.slice(f.start, f.end));
      continue;
    }
    if (f.wireType === WIRE_VARINT) {
      const v = f.varint;
      if (def.kind === 'uint64') out[def.key] = v;
      else if (def.kind === 'int64') out[def.key] = BigInt.asIntN(64, v);
      else if (def.kind === 'uint32') out[def.key] = Number(v & 0xffff_ffffn);
      else if (def.kind === 'enum') out[def.key] = Number(BigInt.asIntN(32, v));
      else out[def.key] = v !== 0n;
    } else if (f.wireType === WIRE_LEN) {
      const value = f.bytes;
      if (def.kind === 'bytes') out[def.key] = value.slice();
      else if (def.kind === 'string') {
        try {
          out[def.key] = strictUtf8.decode(value);
        } catch {
          throw new DevshardError(DevshardErrorCode.Malformed, `${schema.name}.${def.key}: invalid UTF-8`);
        }
      } else if (def.kind === 'repeated') {
        (out[def.key] as unknown[]).push(decodeMessage(def.schema!, value));
      } else {
        if (def.oneof) {
          for (const other of schema.fields) if (other.oneof && other !== def) out[other.key] = undefined;
        }
        const existing = out[def.key] as Record<string, unknown> | undefined;
        const target = existing ?? defaults(def.schema!);
        mergeInto(def.schema!, value, target);
        out[def.key] = target;
      }
    }
  }
  if (unknown.length > 0) out.unknown = unknown.length === 1 ? unknown[0] : concat(unknown);
}

/** Decodes with Go semantics; throws DevshardError(malformed) on bytes Go would refuse. */
export function decodeMessage<T extends object>(schema: MessageSchema<T>, bytes: Uint8Array): T {
  const out = defaults(schema);
  mergeInto(schema, bytes, out);
  return out as T;
}

/** Deterministic encoding (Go `proto.Marshal` with Deterministic: true), unknown fields last. */
export function encodeMessage<T extends object>(schema: MessageSchema<T>, msg: T): Uint8Array {
  const w = new ProtoWriter();
  compiled(schema as MessageSchema<object>).write(w, msg as Record<string, unknown>);
  return w.finish();
}
