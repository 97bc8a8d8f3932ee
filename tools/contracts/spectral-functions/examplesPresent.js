// specs/README.md convention 4: an example for every request body and every success response
// (make mock serves them): `example` or `examples` on the media type, or an `example` on its
// schema (or on an array schema's items).
import { isSuccess, operations, resolve, responses } from "./oas.js";

function mediaHasExample(document, media) {
  if (!media || typeof media !== "object") return false;
  if ("example" in media) return true;
  for (const example of Object.values(media.examples || {})) {
    const resolved = resolve(document, example);
    if (resolved && typeof resolved === "object" && "value" in resolved) return true;
  }
  const schema = resolve(document, media.schema || {});
  if (schema && typeof schema === "object") {
    if ("example" in schema) return true;
    if (schema.type === "array") {
      const items = resolve(document, schema.items || {});
      return Boolean(items && typeof items === "object" && "example" in items);
    }
  }
  return false;
}

export default function examplesPresent(document) {
  const problems = [];
  for (const [route, method, operation] of operations(document)) {
    const label = `${method.toUpperCase()} ${route}`;
    const body = resolve(document, operation.requestBody || {}) || {};
    for (const [mediaType, media] of Object.entries(body.content || {})) {
      if (!mediaHasExample(document, media)) {
        problems.push({
          message: `${label}: request body ${mediaType} has no example`,
          path: ["paths", route, method, "requestBody", "content", mediaType],
        });
      }
    }
    for (const [status, response] of responses(document, operation)) {
      if (!isSuccess(status)) continue;
      for (const [mediaType, media] of Object.entries(response.content || {})) {
        if (!mediaHasExample(document, media)) {
          problems.push({
            message: `${label}: response ${status} ${mediaType} has no example`,
            path: ["paths", route, method, "responses", status, "content", mediaType],
          });
        }
      }
    }
  }
  return problems;
}
