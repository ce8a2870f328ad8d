// Value checks of the request policy (request-policy.ts), each throwing a 400 that names the
// parameter, in the wording of OpenAI's own validation errors ("Invalid type for 'temperature':
// expected a number, but got a string instead.").
import { GatewayError } from '@gonka-gateway/shared';

export type Json = Record<string, unknown>;

export function refuse(param: string, message: string): never {
  throw new GatewayError('invalid_request', message, { param });
}

/** A field the policy does not know (OpenAI: `unknown_parameter`). */
export function refuseUnknown(param: string): never {
  throw new GatewayError('unknown_parameter', `Unknown parameter: '${param}'.`, { param });
}

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

export function wrongType(param: string, expected: string, value: unknown): never {
  return refuse(param, `Invalid type for '${param}': expected ${expected}, but got ${kind(value)} instead.`);
}

export function expectObject(value: unknown, param: string): Json {
  if (!isObject(value)) wrongType(param, 'an object', value);
  return value;
}

export function expectArray(value: unknown, param: string, maxItems: number, minItems = 0): unknown[] {
  if (!Array.isArray(value)) wrongType(param, 'an array', value);
  if (value.length > maxItems) {
    refuse(
      param,
      `Invalid '${param}': array too long. Expected at most ${maxItems} items, got ${value.length}.`,
    );
  }
  if (value.length < minItems) {
    refuse(
      param,
      `Invalid '${param}': empty array. Expected at least ${minItems} item${minItems > 1 ? 's' : ''}.`,
    );
  }
  return value;
}

export function expectString(value: unknown, param: string, maxLength = Number.POSITIVE_INFINITY): string {
  if (typeof value !== 'string') wrongType(param, 'a string', value);
  if (value.length > maxLength) {
    refuse(param, `Invalid '${param}': string too long. Expected at most ${maxLength} characters.`);
  }
  return value;
}

export function expectBoolean(value: unknown, param: string): boolean {
  if (typeof value !== 'boolean') wrongType(param, 'a boolean', value);
  return value;
}

export interface Range {
  readonly min?: number;
  readonly max?: number;
  /** The minimum itself is refused: (min, max]. */
  readonly minExclusive?: boolean;
}

export function expectNumber(value: unknown, param: string, range: Range = {}): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) wrongType(param, 'a number', value);
  checkRange(value, param, range);
  return value;
}

export function expectInteger(value: unknown, param: string, range: Range = {}): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) wrongType(param, 'an integer', value);
  checkRange(value, param, range);
  return value;
}

function checkRange(value: number, param: string, { min, max, minExclusive }: Range): void {
  if (min !== undefined && (minExclusive ? value <= min : value < min)) {
    refuse(
      param,
      `Invalid '${param}': below the minimum. Expected a value ${minExclusive ? '>' : '>='} ${min}, but got ${value} instead.`,
    );
  }
  if (max !== undefined && value > max) {
    refuse(
      param,
      `Invalid '${param}': above the maximum. Expected a value <= ${max}, but got ${value} instead.`,
    );
  }
}

/** One of `values`, else a 400 listing them. */
export function expectOneOf<T extends string>(value: unknown, param: string, values: readonly T[]): T {
  if (typeof value !== 'string') wrongType(param, 'a string', value);
  if (!(values as readonly string[]).includes(value)) {
    const listed = values.map((v) => `'${v}'`).join(', ');
    refuse(param, `Invalid value for '${param}': '${clip(value)}'. Supported values are: ${listed}.`);
  }
  return value as T;
}

/** Every key of `object` must be in `allowed`; an unknown one is named with its path. */
export function onlyKeys(object: Json, allowed: ReadonlySet<string>, path: string): void {
  for (const key in object) {
    if (!allowed.has(key)) refuseUnknown(`${path}.${clip(key)}`);
  }
}

export function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}
