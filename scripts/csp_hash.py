#!/usr/bin/env python3
"""Trunk post-build hook: pins the page's inline scripts in its Content-Security-Policy.

Trunk writes its wasm loader as an inline <script type="module"> whose text changes with every
build (it names the hashed bundle). Rather than allowing every inline script ('unsafe-inline'),
this hook computes the SHA-256 of each inline script in the staged index.html and writes those
hashes where index.html's CSP says CSP_INLINE_SCRIPT_HASHES. A build without the placeholder fails.
"""
import base64
import hashlib
import os
import re
import sys

PLACEHOLDER = "CSP_INLINE_SCRIPT_HASHES"


def main() -> int:
    staging = os.environ.get("TRUNK_STAGING_DIR")
    if not staging:
        print("csp_hash: TRUNK_STAGING_DIR is not set (run as a trunk hook)", file=sys.stderr)
        return 1
    path = os.path.join(staging, "index.html")
    with open(path, encoding="utf-8") as f:
        html = f.read()
    if PLACEHOLDER not in html:
        print(f"csp_hash: {PLACEHOLDER} not found in {path}", file=sys.stderr)
        return 1
    scripts = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", html, flags=re.S)
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode() + "'"
        for s in scripts
    ]
    html = html.replace(PLACEHOLDER, " ".join(hashes))
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    print(f"csp_hash: pinned {len(hashes)} inline script(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
