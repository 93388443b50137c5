/**
 * Secrets must never reach a log line, an error message or a report: account keys,
 * view grants, ADB unlock codes and viewer URLs. Everything that prints text from the
 * wire passes it through redact() first.
 */

const PATTERNS: Array<[RegExp, string]> = [
  // Account keys and view grants, wherever they appear (headers, URLs, bodies).
  [/\bpck_[A-Za-z0-9_-]+/g, 'pck_[redacted]'],
  [/\bpvg_[A-Za-z0-9_-]+/g, 'pvg_[redacted]'],
  // Viewer capability URLs carry their token in the path.
  [/\/v\/[A-Za-z0-9_-]{16,}/g, '/v/[redacted]'],
  // Query tokens of any kind.
  [/([?&]token=)[^&\s"']+/g, '$1[redacted]'],
  // The ADB gateway's unlock line and JSON fields that hold secrets.
  [/(UNLOCK )\S+/g, '$1[redacted]'],
  [/("(?:code|key|url|watch_url|token)"\s*:\s*")[^"]*(")/g, '$1[redacted]$2'],
  // Any bearer credential; a placeholder such as `Bearer pck_...` in advice stays readable.
  [/(\bBearer )[A-Za-z0-9._~+/-]{8,}=*/gi, '$1[redacted]'],
];

export function redact(text: string): string {
  let out = text;
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);
  return out;
}
