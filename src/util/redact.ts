/**
 * Secrets must never reach a log line, an error message or a report: account keys (pck_),
 * view grants (pvg_), ADB unlock codes (pau_), dashboard sign-in links (psl_) and session
 * tokens (JWTs), and viewer URLs. Everything that prints text
 * from the wire passes it through redact() first.
 *
 * A client may put a secret anywhere: glued to other text (`?x=a_pvg_...`), behind an
 * encoded separator (`?token%3Dpvg_...`), or percent-encoded itself, once or more. So the
 * prefixes match without a word boundary, and any run of text that holds percent escapes
 * is decoded before it is checked; a run that hides a secret is replaced whole.
 */

/** Characters of an account key, a grant, an unlock code or a viewer token. */
const BODY = '[A-Za-z0-9_-]+';

const PATTERNS: Array<[RegExp, string]> = [
  // Account keys, view grants and unlock codes, wherever they appear (headers, URLs, bodies).
  [new RegExp(`pck_${BODY}`, 'gi'), 'pck_[redacted]'],
  [new RegExp(`pvg_${BODY}`, 'gi'), 'pvg_[redacted]'],
  [new RegExp(`pau_${BODY}`, 'gi'), 'pau_[redacted]'],
  // Dashboard sign-in links' tokens, and the dashboard's session tokens (JWTs: base64url JSON
  // header and payload, both starting `eyJ`, then the signature).
  [new RegExp(`psl_${BODY}`, 'gi'), 'psl_[redacted]'],
  [/eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, '[redacted-jwt]'],
  // Viewer capability URLs carry their token in the path.
  [/\/v\/[A-Za-z0-9_-]{16,}/g, '/v/[redacted]'],
  // Query (or fragment) parameters that carry secrets of any kind.
  [/([?&;#](?:token|access_token|code|key|grant|unlock)=)[^&#\s"']+/gi, '$1[redacted]'],
  // The ADB gateway's unlock line and JSON fields that hold secrets.
  [/(UNLOCK )\S+/g, '$1[redacted]'],
  [/("(?:key|url|watch_url|token)"\s*:\s*")[^"]*(")/g, '$1[redacted]$2'],
  // A "code" field holds an unlock code or an error code: the API's error codes
  // (session_limit, phones_busy: lower-case words) are what users need to read.
  [/("code"\s*:\s*")(?![a-z]+(?:_[a-z]+)*")[^"]*(")/g, '$1[redacted]$2'],
  // Any bearer credential: a token has a digit or punctuation in it, or is long. The words
  // of a message ("Missing bearer credential") and a placeholder such as `Bearer pck_...`
  // in advice stay readable.
  [/(\bBearer )(?:(?=[A-Za-z]*[0-9._~+/-])[A-Za-z0-9._~+/-]{8,}|[A-Za-z]{20,})=*/gi, '$1[redacted]'],
];

/** A run of non-space text with at least one percent escape in it. */
const ENCODED_RUN = /[^\s"'<>]*%[0-9A-Fa-f]{2}[^\s"'<>]*/g;
/** Enough for a secret encoded several times over; deeper nesting is redacted whole. */
const MAX_DECODES = 4;

function redactPlain(text: string): string {
  let out = text;
  for (const [re, replacement] of PATTERNS) out = out.replace(re, replacement);
  return out;
}

/** Decodes every %XX escape (malformed ones stay as they are). */
function decodeOnce(text: string): string {
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      // Not UTF-8: decode byte by byte so an ASCII secret still shows.
      return run.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    }
  });
}

/** True when some decoding of `run` shows a secret (or the run is encoded too deeply to tell). */
function hidesSecret(run: string): boolean {
  let current = run;
  for (let i = 0; i < MAX_DECODES; i++) {
    const decoded = decodeOnce(current);
    if (decoded === current) return false;
    if (redactPlain(decoded) !== decoded) return true;
    current = decoded;
  }
  return /%[0-9A-Fa-f]{2}/.test(current);
}

export function redact(text: string): string {
  const decodedRuns = text.replace(ENCODED_RUN, (run) => (hidesSecret(run) ? '[redacted]' : run));
  return redactPlain(decodedRuns);
}
