// specs/README.md convention 4: x-client-method names one client method, so no two operations
// share one (operationId uniqueness is Spectral's own operation-operationId-unique).
import { operations } from "./oas.js";

export default function uniqueClientMethods(document) {
  const seen = new Map();
  const problems = [];
  for (const [route, method, operation] of operations(document)) {
    const name = operation["x-client-method"];
    if (typeof name !== "string") continue;
    const label = `${method.toUpperCase()} ${route}`;
    if (seen.has(name)) {
      problems.push({
        message: `x-client-method ${name} is also used by ${seen.get(name)}`,
        path: ["paths", route, method, "x-client-method"],
      });
    } else {
      seen.set(name, label);
    }
  }
  return problems;
}
