// Conv Explorer: move this browser to the other pool of workers (ui/lanes.py mounts it once,
// in the run that decided the move, then stops that run).
//
// A websocket stays on the worker process it reached, so a session changes pools by
// reconnecting: set the cookies nginx routes by (ce_lane) and that carry an uploaded image
// (ce_upload), then load the same link again. location.replace, not assign: the Back button
// goes where it went before, not to a page that would move again. The link is the one the
// server computed for this run (data.query): the run stopped before writing it into the URL.
export default function (component) {
  const data = component.data || {};
  const reg = (window.__convExplorerLane ??= {});
  if (!data.id || reg.moved === data.id) return;
  reg.moved = data.id;
  for (const [name, value] of Object.entries(data.cookies || {})) {
    const age = value == null ? "; Max-Age=0" : name === "ce_upload" ? `; Max-Age=${data.upload_max_age}` : "";
    document.cookie = `${name}=${value == null ? "" : encodeURIComponent(value)}; Path=/; SameSite=Lax${age}`;
  }
  const query = new URLSearchParams(data.query || {}).toString();
  window.location.replace(window.location.pathname + (query ? `?${query}` : "") + window.location.hash);
}
