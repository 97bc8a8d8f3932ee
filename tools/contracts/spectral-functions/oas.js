// Helpers shared by the project's Spectral functions (not a rule function itself).
// The rules run on the unresolved document (resolved: false), so a `$ref` stays visible: the
// conventions are about which schema a body names, and findings point at the spec's own lines.

export const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

// Follows local $refs (a bounded number of hops) to the node they name.
export function resolve(document, node) {
  for (let hop = 0; hop < 64; hop++) {
    if (!node || typeof node !== "object" || typeof node.$ref !== "string") return node;
    if (!node.$ref.startsWith("#/")) return node;
    let target = document;
    for (const part of node.$ref.slice(2).split("/")) {
      const key = part.replace(/~1/g, "/").replace(/~0/g, "~");
      if (!target || typeof target !== "object" || !(key in target)) return node;
      target = target[key];
    }
    node = target;
  }
  return node;
}

// [route, method, operation] for every operation of the document.
export function* operations(document) {
  const paths = document && typeof document.paths === "object" ? document.paths : {};
  for (const [route, item] of Object.entries(paths || {})) {
    const resolved = resolve(document, item);
    if (!resolved || typeof resolved !== "object") continue;
    for (const method of METHODS) {
      if (resolved[method] && typeof resolved[method] === "object") {
        yield [route, method, resolved[method]];
      }
    }
  }
}

// [status, response] for the operation's responses, each resolved.
export function* responses(document, operation) {
  for (const [status, response] of Object.entries(operation.responses || {})) {
    yield [String(status), resolve(document, response) || {}];
  }
}

export const isSuccess = (status) => status.startsWith("2");
export const isError = (status) => status === "default" || /^[45]/.test(status);

export function isJson(mediaType) {
  const essence = mediaType.split(";")[0].trim().toLowerCase();
  return essence === "application/json" || essence.endsWith("+json");
}

export function codegen(document) {
  const meta = document && document["x-codegen"];
  return meta && typeof meta === "object" ? meta : {};
}

export function schemaRef(schema) {
  return schema && typeof schema === "object" && typeof schema.$ref === "string"
    ? schema.$ref
    : null;
}
