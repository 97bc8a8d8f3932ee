// specs/README.md convention 2: the top-level x-codegen names the package, the client class and
// the error style, and (but for plain-text) an error schema that exists in components/schemas.
import { codegen } from "./oas.js";

const STYLES = ["fastapi-422", "envelope", "plain-text"];

export default function xCodegen(document) {
  if (!document || typeof document["x-codegen"] !== "object" || !document["x-codegen"]) {
    return [{ message: "missing top-level x-codegen (package, client, error-style)", path: [] }];
  }
  const meta = codegen(document);
  const at = (key) => ["x-codegen", ...(key in meta ? [key] : [])];
  const problems = [];
  if (typeof meta.package !== "string" || !/^[a-z][a-z0-9_]*$/.test(meta.package)) {
    problems.push({ message: "x-codegen.package must be a Python package name", path: at("package") });
  }
  if (typeof meta.client !== "string" || !/^[A-Z][A-Za-z0-9]*$/.test(meta.client)) {
    problems.push({ message: "x-codegen.client must be a CamelCase class name", path: at("client") });
  }
  const style = meta["error-style"];
  if (!STYLES.includes(style)) {
    problems.push({
      message: `x-codegen.error-style must be one of ${STYLES.join(", ")}`,
      path: at("error-style"),
    });
    return problems;
  }
  const schemas = (document.components && document.components.schemas) || {};
  const errorSchema = meta["error-schema"];
  if (style === "plain-text") {
    if (errorSchema !== undefined) {
      problems.push({
        message: "x-codegen.error-schema is not used with error-style plain-text",
        path: at("error-schema"),
      });
    }
  } else if (typeof errorSchema !== "string") {
    problems.push({ message: `x-codegen.error-schema is required with error-style ${style}`, path: at("error-schema") });
  } else if (!(errorSchema in schemas)) {
    problems.push({
      message: `x-codegen.error-schema ${errorSchema} is not in components/schemas`,
      path: at("error-schema"),
    });
  }
  const messageSchema = meta["message-error-schema"];
  if (messageSchema !== undefined && !(typeof messageSchema === "string" && messageSchema in schemas)) {
    problems.push({
      message: `x-codegen.message-error-schema ${messageSchema} is not in components/schemas`,
      path: at("message-error-schema"),
    });
  }
  return problems;
}
