// Classifies the changes between two OpenAPI 3.0 documents with api-smart-diff.
//
// Input (stdin): {"before": <document>, "after": <document>}, both already parsed from YAML by
// the caller (codegen.contracts), $refs local. Output (stdout): a JSON array of
// {"type", "action", "path", "description"}, one per change, where type is api-smart-diff's
// classification: breaking | non-breaking | deprecated | annotation | unclassified.
import { apiCompare } from "api-smart-diff";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { before, after } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const { diffs } = apiCompare(before, after);
const out = diffs.map((diff) => ({
  type: diff.type,
  action: diff.action,
  path: diff.path.map(String),
  description: diff.description ?? null,
}));
process.stdout.write(JSON.stringify(out));
