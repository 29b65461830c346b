#!/usr/bin/env python3
"""An `exec` handler: sends one email per attempt, idempotently.

leasehold writes the attempt to stdin as JSON and reads the outcome from the last JSON
line on stdout: {"ok": ...}, {"retry": {"code", "message", "delayMs"}} or
{"fail": {"code", "message"}}. The idempotency key is the same on every retry and after a
failover, so the "provider" here (a directory of sent mails) never sends twice.
"""

import json
import os
import signal
import sys
import time


def stop(signum, frame):
    # The authority lost the lease (or the attempt timed out): stop now. Whatever we
    # answered now would be refused by the fence anyway.
    sys.exit(143)


def main():
    signal.signal(signal.SIGTERM, stop)
    attempt = json.load(sys.stdin)
    payload = attempt.get("payload") or {}
    to = payload.get("to")
    if not to or "@" not in to:
        print(json.dumps({"fail": {"code": "BAD_ADDRESS", "message": f"cannot send to {to!r}"}}))
        return
    if payload.get("flaky") and attempt["attempt"] == 1:
        print(json.dumps({"retry": {"code": "SMTP_BUSY", "message": "try later", "delayMs": 500}}))
        return
    outbox = os.environ.get("OUTBOX", "outbox")
    os.makedirs(outbox, exist_ok=True)
    sent = os.path.join(outbox, attempt["idempotencyKey"].replace("/", "_") + ".json")
    if not os.path.exists(sent):
        time.sleep(float(payload.get("seconds", 0.2)))  # the provider's latency
        with open(sent + ".tmp", "w") as f:
            json.dump({"to": to, "subject": payload.get("subject", "")}, f)
        os.replace(sent + ".tmp", sent)
    print(json.dumps({"ok": {"sentTo": to, "receipt": os.path.basename(sent)}}))


if __name__ == "__main__":
    main()
