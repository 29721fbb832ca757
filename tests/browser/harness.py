"""The widget's front end (panel.js) alone in a plain page, fed a recording by a fake model.

No Jupyter: a page with no JupyterLab CSS variables (as in VS Code or a bare HTML export), in a
light or a dark colour scheme, at any width. The browser tests use it for what does not need a
kernel (layout at 250 px, the fallback colours' contrast, hover) and for the screenshots of the
replayed GPU charts.

    python tests/browser/harness.py    # serves it and prints the URL (for a look by hand)
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from replay import load, snapshot

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>gpudask view harness</title>
<style>
  body { margin: 0; font: 13px system-ui, sans-serif; }
  body.light { background: #ffffff; color: #1f1f1f; }
  body.dark { background: #1e1e1e; color: #e0e0e0; color-scheme: dark; }
  #host { box-sizing: border-box; }
</style>
</head>
<body>
<main id="host"></main>
<script type="module">
import widget from './panel.js';
const params = new URLSearchParams(location.search);
document.body.className = params.get('theme') || 'light';
const host = document.getElementById('host');
host.style.width = (params.get('width') || '100%') + (params.get('width') ? 'px' : '');
const snapshot = await (await fetch('./snapshot.json')).json();
const dt = Date.now() / 1000 - snapshot.time;
const shift = f => {
  f.time += dt;
  f.samples.forEach(s => (s.t += dt));
  f.tasks.forEach(t => { t.start += dt; t.stop += dt; });
  if (f.cluster && f.cluster.stopped_at) f.cluster.stopped_at += dt;
  return f;
};
const first = shift(snapshot);
const handlers = {};
const traits = { interval: 0.25, paused: false, history: 300, processes: false };
window.sent = [];
const model = {
  get: name => traits[name],
  set: (name, value) => {
    traits[name] = value;
    (handlers['change:' + name] || []).forEach(h => h());
  },
  save_changes: () => {},
  on: (name, h) => (handlers[name] = (handlers[name] || []).concat([h])),
  off: (name, h) => (handlers[name] = (handlers[name] || []).filter(x => x !== h)),
  send: content => {
    window.sent.push(content);
    if (content.type === 'hello') setTimeout(() => emit({ type: 'frame', frame: first }), 0);
  }
};
const emit = message => (handlers['msg:custom'] || []).forEach(h => h(message));
window.emitToView = emit;
window.keepalive = setInterval(() => {
  const now = Date.now() / 1000;
  const last = first.samples[first.samples.length - 1];
  emit({ type: 'frame', frame: Object.assign({}, first, {
    kind: 'delta', time: now, samples: [{ t: now, values: last.values }], tasks: [] }) });
}, 250);
window.cleanup = widget.render({ model, el: host });
</script>
</body>
</html>
"""


def build(directory: Path, recording: Path | None = None) -> Path:
    """Write the page, panel.js and the snapshot of ``recording`` into ``directory``."""
    from gpudask_jupyter.widget import STATIC

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "index.html").write_text(PAGE)
    shutil.copy(STATIC, directory / "panel.js")
    (directory / "snapshot.json").write_text(json.dumps(snapshot(load(recording), time.time())))
    return directory


@contextmanager
def serve(directory: Path, recording: Path | None = None) -> Iterator[str]:
    """Serve the harness on a free port; yields its URL."""
    build(directory, recording)
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp)) as url:
        print(url, flush=True)
        threading.Event().wait()
