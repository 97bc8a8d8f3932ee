// specs/README.md convention 4: every error status (4xx, 5xx, default) an operation documents
// uses the API's error shape, as its x-codegen.error-style declares:
// - envelope, fastapi-422: a JSON body whose schema is $ref x-codegen.error-schema; fastapi-422
//   also allows x-codegen.message-error-schema (FastAPI's {"detail": "..."} of a 404);
// - plain-text (ratelimit, as upstream): text/plain bodies, or no body;
// - any style: an error status whose schema is a success schema of the same operation is an
//   answer, not a failure (convention 9: the rate limit 429, a readiness 503).
import { codegen, isError, isJson, isSuccess, operations, responses, schemaRef } from "./oas.js";

export default function errorResponses(document) {
  const meta = codegen(document);
  const style = meta["error-style"];
  const expected = `#/components/schemas/${meta["error-schema"]}`;
  const problems = [];
  for (const [route, method, operation] of operations(document)) {
    const successRefs = new Set();
    for (const [status, response] of responses(document, operation)) {
      if (!isSuccess(status)) continue;
      for (const media of Object.values(response.content || {})) {
        const ref = schemaRef(media && media.schema);
        if (ref) successRefs.add(ref);
      }
    }
    for (const [status, response] of responses(document, operation)) {
      if (!isError(status)) continue;
      const where = ["paths", route, method, "responses", status];
      const content = response.content || {};
      const label = `${method.toUpperCase()} ${route} ${status}`;
      if (style === "plain-text") {
        for (const [mediaType, media] of Object.entries(content)) {
          const ref = schemaRef(media && media.schema);
          if (mediaType.split(";")[0].trim() !== "text/plain" && !(ref && successRefs.has(ref))) {
            problems.push({
              message: `${label}: ${mediaType}; plain-text APIs answer errors as text/plain`,
              path: [...where, "content", mediaType],
            });
          }
        }
        continue;
      }
      if (Object.keys(content).length === 0) {
        problems.push({ message: `${label}: no body; errors carry ${expected}`, path: where });
      }
      const allowed = new Set([expected, ...successRefs]);
      if (meta["message-error-schema"]) allowed.add(`#/components/schemas/${meta["message-error-schema"]}`);
      for (const [mediaType, media] of Object.entries(content)) {
        const ref = schemaRef(media && media.schema);
        if (!isJson(mediaType) || !allowed.has(ref)) {
          // Point at the $ref (or the schema) that is wrong, else at the media type.
          const at = [...where, "content", mediaType];
          if (media && media.schema) at.push("schema", ...(ref ? ["$ref"] : []));
          problems.push({
            message: `${label}: ${mediaType} with schema ${ref || "(inline)"}; errors are JSON with $ref ${expected}`,
            path: at,
          });
        }
      }
    }
  }
  return problems;
}
