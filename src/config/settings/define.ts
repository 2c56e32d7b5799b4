import type { z } from 'zod';

// The pieces every setting is written with, once: its environment variable, its zod schema (check,
// default, transform, description), and the Config field it lands in. A layout is a tree of Config
// fields whose leaves are settings (the value as parsed) or values derived from settings; both the
// flat schema of every variable and the Config type are read off that one tree, so a setting
// cannot exist outside Config and a Config field cannot exist without its source.

/** What a derived value may read besides settings: `~`, CODEXEC_HOME resolved, where runs live. */
export interface Context {
  /** The user's home directory, which a leading `~` names. */
  readonly home: string;
  /** CODEXEC_HOME, absolute. */
  readonly root: string;
  /** Where runs live (paths.ts runHome). */
  readonly runs: string;
}

/**
 * One setting: its variable (env, or a key of config.json) and how its value is checked. The
 * schema is made when asked for, not kept: settings are parsed once, at start-up, and ~90 kept
 * zod schemas would hold ~1 MB of an idle server's heap for the rest of its life.
 */
export class Setting<Name extends string = string, Schema extends z.ZodType = z.ZodType> {
  readonly kind = 'setting';
  constructor(
    readonly name: Name,
    private readonly make: () => Schema,
  ) {}

  /** A new schema on every call. */
  schema(): Schema {
    return this.make();
  }
}

/**
 * A Config field computed from settings: a default that follows another setting, a path resolved
 * against CODEXEC_HOME, a file read at start-up. `inputs` are the settings it reads.
 */
export class Derived<Out = unknown, Inputs extends readonly Setting[] = readonly Setting[]> {
  readonly kind = 'derived';
  constructor(
    readonly inputs: Inputs,
    readonly derive: (values: readonly unknown[], context: Context) => Out,
  ) {}
}

/** Config fields (keys) mapped to settings, derived values, or nested groups of them. */
export interface Layout {
  readonly [field: string]: Setting | Derived | Layout;
}

/** The parsed values of `inputs`, in their order. */
type Values<Inputs extends readonly Setting[]> = {
  readonly [K in keyof Inputs]: Inputs[K] extends Setting<string, infer S> ? z.output<S> : never;
};

/** A setting named `name`, checked by the schema `schema` makes. */
export function setting<const Name extends string, Schema extends z.ZodType>(
  name: Name,
  schema: () => Schema,
): Setting<Name, Schema> {
  return new Setting(name, schema);
}

/** A Config field computed from the values of `inputs` (and the context). */
export function from<const Inputs extends readonly Setting[], Out>(
  inputs: Inputs,
  derive: (values: Values<Inputs>, context: Context) => Out,
): Derived<Out, Inputs> {
  return new Derived(inputs, derive as (values: readonly unknown[], context: Context) => Out);
}

/** A Config field that reads only the context. */
export function fromContext<Out>(derive: (context: Context) => Out): Derived<Out, readonly []> {
  return new Derived([] as const, (_values, context) => derive(context));
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type UnionToIntersection<U> = (U extends unknown ? (union: U) => void : never) extends (
  intersection: infer I,
) => void
  ? I
  : never;

/** The value a layout node puts in Config. */
type Out<Node> =
  Node extends Setting<string, infer S>
    ? Readonly<z.output<S>>
    : Node extends Derived<infer O>
      ? Readonly<O>
      : Node extends Layout
        ? Shape<Node>
        : never;

/** Fields whose value may be absent: optional in Config, and left out rather than set to undefined. */
type OptionalKeys<T> = { [K in keyof T]: undefined extends Out<T[K]> ? K : never }[keyof T];

/** The Config (part) a layout yields. */
export type Shape<T> = Simplify<
  { readonly [K in Exclude<keyof T, OptionalKeys<T>>]: Out<T[K]> } & {
    readonly [K in OptionalKeys<T>]?: Exclude<Out<T[K]>, undefined>;
  }
>;

/** Every setting a layout node reads, as variable → parsed value. */
type SettingsIn<Node> =
  Node extends Setting<infer Name, infer S>
    ? { [K in Name]: z.output<S> }
    : Node extends Derived<unknown, infer Inputs>
      ? Inputs extends readonly [] // reads no setting: adds none (`never` vanishes from the union)
        ? never
        : UnionToIntersection<SettingsIn<Inputs[number]>>
      : Node extends Layout
        ? UnionToIntersection<{ [K in keyof Node]: SettingsIn<Node[K]> }[keyof Node]>
        : never;

/**
 * The parsed settings of a layout, keyed by variable; `never` (failing every use) when a helper lost
 * a setting's literal name, which would make every string a setting.
 */
export type SettingsOf<T extends Layout> = string extends keyof SettingsIn<T>
  ? never
  : Simplify<SettingsIn<T>>;

/** One layout of several subjects' parts; a field two parts both define is a mistake, refused. */
export function joinLayouts<const Parts extends readonly Layout[]>(
  ...parts: Parts
): Simplify<UnionToIntersection<Parts[number]>> {
  const joined: Record<string, Layout[string]> = {};
  for (const part of parts)
    for (const [field, node] of Object.entries(part)) {
      if (field in joined) throw new Error(`Config field ${field} is laid out twice`);
      joined[field] = node;
    }
  return joined as Simplify<UnionToIntersection<Parts[number]>>;
}

/** Every setting of `layout`, by variable, in the order the layout reaches them. */
export function settingsOf(layout: Layout): Map<string, Setting> {
  const found = new Map<string, Setting>();
  const add = (item: Setting) => {
    const known = found.get(item.name);
    if (known !== undefined && known !== item) throw new Error(`setting ${item.name} is declared twice`);
    found.set(item.name, item);
  };
  const walk = (node: Layout) => {
    for (const child of Object.values(node)) {
      if (child instanceof Setting) add(child);
      else if (child instanceof Derived) for (const input of child.inputs) add(input);
      else walk(child);
    }
  };
  walk(layout);
  return found;
}

/** Fill `layout` with parsed `settings`; a field whose value is undefined is left out. */
export function resolveLayout<T extends Layout>(
  layout: T,
  settings: Readonly<Record<string, unknown>>,
  context: Context,
): Shape<T> {
  const result: Record<string, unknown> = {};
  for (const [field, node] of Object.entries(layout)) {
    const value =
      node instanceof Setting
        ? settings[node.name]
        : node instanceof Derived
          ? node.derive(
              node.inputs.map((input) => settings[input.name]),
              context,
            )
          : resolveLayout(node, settings, context);
    if (value !== undefined) result[field] = value;
  }
  return result as Shape<T>;
}
