// Conv Explorer: a follower's browser watches its room's beacon (ui/beacon.py mounts it in every
// run of a follower). Every data.every_ms it reads the small file nginx serves for the room; once
// the file names a version after the one this run showed (data.shown), it asks for one rerun (a
// trigger) and stops: that rerun reads the room from the store and mounts the watcher again with
// the new version. The trigger says which version this page showed: the rerun carries this page's
// widget values, which are that version's (the server may have shown a newer one meanwhile).
// A missing file (no such room, no beacon yet) or a failed read asks for nothing.
export default function (component) {
  const { data, setTriggerValue } = component;
  const reg = (window.__convExplorerBeacon ??= {});
  clearInterval(reg.timer);  // mounted again with new data: one watcher at a time
  if (!data || !data.url) return;
  const url = new URL(data.url, document.baseURI);
  let asked = false;
  const look = async () => {
    if (asked) return;
    try {
      const r = await fetch(url, { cache: "no-store" });
      if (!r.ok) return;
      const v = Number((await r.json()).v);
      if (!asked && v > data.shown) {
        asked = true;
        setTriggerValue("changed", { shown: data.shown, seen: v });
      }
    } catch (e) { /* the next look tries again; the slow poll is the fallback */ }
  };
  const timer = setInterval(look, data.every_ms);
  reg.timer = timer;
  return () => clearInterval(timer);
}
