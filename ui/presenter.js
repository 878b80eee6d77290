// Conv Explorer: keyboard control of the page's animations, for a presenter remote
// (ui/presenter.py mounts it once per run, on every page).
//
// Space plays or pauses the animation in view; the arrow keys (and Page Up / Page Down, which
// many remotes send) step it back and forth. The animation in view is the animated chart with
// the largest visible area. Keys typed into a text box, a number input or a slider (which uses
// the arrows itself) are left alone. Playing, pausing and stepping use the figure's own buttons
// and slider steps (their `args`), so the keys do exactly what a click does.
//
// It also runs those clicks: the buttons and slider steps (viz/animation.py) have `execute:
// false`, and every animated chart of the page (pickable or not) is watched here, so a click on
// Play, Pause or a slider step calls Plotly.animate with the control's own args. Plotly.animate
// rejects the promise of an animation that a later call interrupts (Pause, a slider step, a
// new Play): that is how pausing works, so the rejection is caught here. Executed by Plotly
// itself, the same rejection was logged as "API call to Plotly.animate rejected" plus an
// unhandled promise rejection at every Pause.
export default function (component) {
  const reg = (window.__convExplorerKeys ??= {});
  if (reg.listening) return;
  reg.listening = true;
  const current = new WeakMap(); // chart -> index of the step it shows
  const playing = new WeakSet();

  const animated = () =>
    [...document.querySelectorAll(".js-plotly-plot")].filter((gd) => {
      const slider = ((gd.layout || {}).sliders || [])[0];
      return slider && (slider.steps || []).length > 1 && ((gd.layout.updatemenus || [])[0] || {}).buttons;
    });
  const visibleArea = (el) => {
    const r = el.getBoundingClientRect();
    const w = Math.min(r.right, innerWidth) - Math.max(r.left, 0);
    const h = Math.min(r.bottom, innerHeight) - Math.max(r.top, 0);
    return w > 0 && h > 0 ? w * h : 0;
  };
  const inView = () => {
    let best = null, bestArea = 0;
    for (const gd of animated()) {
      const area = visibleArea(gd);
      if (area > bestArea) [best, bestArea] = [gd, area];
    }
    return best;
  };
  const watch = (gd) => {
    if (gd.__convExplorerKeys) return;
    gd.__convExplorerKeys = true;
    const steps = () => ((gd.layout.sliders || [])[0] || {}).steps || [];
    gd.on("plotly_animatingframe", (ev) => {
      const i = steps().findIndex((s) => s.label === (ev && ev.name));
      if (i >= 0) current.set(gd, i);
    });
    gd.on("plotly_sliderchange", (ev) => {
      const i = steps().findIndex((s) => s === (ev && ev.step) || s.label === (ev && ev.step && ev.step.label));
      if (i >= 0) current.set(gd, i);
      // a step the user chose (not the slider following the animation): show it
      if (ev && ev.interaction && ours(ev.step)) press(gd, ev.step);
    });
    gd.on("plotly_buttonclicked", (ev) => {
      const b = ev && ev.button;
      if (!ours(b)) return;
      if (String(b.label).includes("Play")) playing.add(gd);
      else playing.delete(gd);
      press(gd, b);
    });
    gd.on("plotly_animated", () => playing.delete(gd));
    gd.on("plotly_animationinterrupted", () => playing.delete(gd));
  };
  const indexOf = (gd) => (current.has(gd) ? current.get(gd) : gd.layout.sliders[0].active || 0);
  const button = (gd, word) => gd.layout.updatemenus[0].buttons.find((b) => String(b.label).includes(word));
  // a control Plotly leaves to us: an animate command it does not execute itself
  const ours = (c) => !!c && c.method === "animate" && c.execute === false;
  // an interrupted animation rejects with no reason (expected); any other failure is an error
  const press = (gd, c) => c && window.Plotly.animate(gd, ...c.args).catch((err) => {
    if (err !== undefined) console.error("Conv Explorer: Plotly.animate failed", err);
  });

  const togglePlay = (gd) => {
    if (playing.has(gd)) {
      playing.delete(gd);
      press(gd, button(gd, "Pause"));
    } else {
      playing.add(gd);
      press(gd, button(gd, "Play"));
    }
  };
  const step = (gd, by) => {
    const steps = gd.layout.sliders[0].steps;
    const i = Math.min(Math.max(indexOf(gd) + by, 0), steps.length - 1);
    if (playing.has(gd)) togglePlay(gd);
    current.set(gd, i);
    press(gd, steps[i]);
  };

  const typing = (el) =>
    el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) ||
      ["slider", "combobox", "spinbutton", "textbox", "listbox", "option"].includes(el.getAttribute("role")));
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.altKey || ev.metaKey || typing(ev.target) || !window.Plotly) return;
    const moves = { ArrowRight: 1, ArrowDown: 1, PageDown: 1, ArrowLeft: -1, ArrowUp: -1, PageUp: -1 };
    if (ev.key !== " " && !(ev.key in moves)) return;
    const gd = inView();
    if (!gd) return; // nothing animated in view: the key scrolls the page as usual
    watch(gd);
    ev.preventDefault();
    if (ev.key === " ") togglePlay(gd);
    else step(gd, moves[ev.key]);
  });
  // every chart watched from the start: its controls' clicks are run here, and a click on Play
  // or the slider keeps the index right
  const scan = () => document.querySelectorAll(".js-plotly-plot").forEach((gd) => gd.layout && gd.on && watch(gd));
  new MutationObserver(scan).observe(document.body, { childList: true, subtree: true });
  scan();
}
