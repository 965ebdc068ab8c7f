"""Every bound the addon keeps, in one place: what it decodes, stores, remembers and logs.

Whatever a client or an upstream sends, the addon's own memory, disk and time stay within these; what is
over a bound is forwarded untouched and left unread, uncached or cut, with an event that says so. The
README's "Bounded" section quotes these numbers.
"""

from __future__ import annotations

KiB = 1024
MiB = 1024 * KiB

# Bytes decoded of one compressed body (a request, an answer, the copy of a stream): a compression bomb
# costs at most this much, and a body that decodes to more is forwarded untouched and not read.
MAX_DECODED_BYTES = 32 * MiB
# Bytes of an error answer read to explain it: provider error texts are a few KB.
MAX_ERROR_BODY_BYTES = 1 * MiB
# One stored value (a reasoning field, a signature, a thinking block, a reasoning item) and one stored
# record (the reasoning of one answer) as serialised JSON; an answer over either is logged, not cached.
MAX_VALUE_BYTES = 4 * MiB
MAX_RECORD_BYTES = 8 * MiB
# One line of the event log; a longer event has its longest strings and lists cut to fit.
MAX_LOG_LINE_BYTES = 64 * KiB
# Readable text (reasoning text, thinking) written to the log per field; its length and hash are kept.
MAX_LOGGED_TEXT_CHARS = 4096
