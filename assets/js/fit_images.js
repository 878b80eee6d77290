// Conv Explorer: pickable image charts as tall as their column allows (ui/fit_images.py mounts it).
// Only public state is read: the layout the Python figure set (its margins, its axes' fixed
// ranges, its height; viz/conv2d.py's image panels set all of them) and the chart's own width.
const PLOTLY_MARGIN = { l: 80, r: 80, t: 100, b: 80 }; // Plotly's documented default margins
export default function (component) {
  const reg = (window.__dcFitImages ??= {});
  reg.data = component.data;
  const span = (axis) => {
    const r = (axis || {}).range;
    return Array.isArray(r) && r.length === 2 ? Math.abs(r[1] - r[0]) : NaN;
  };
  const fit = () => {
    for (const [name, spec] of Object.entries(reg.data.charts || {})) {
      const gd = [...document.querySelectorAll(`.st-key-pick-${name} .js-plotly-plot`)]
        .find((g) => Array.isArray(g.data) && g.layout);
      if (!gd || !window.Plotly) continue;
      const L = gd.layout, m = { ...PLOTLY_MARGIN, ...(L.margin || {}) };
      const aspect = spec.aspect ?? span(L.yaxis) / span(L.xaxis); // rows / columns of the extent
      if (!Number.isFinite(aspect) || aspect <= 0) continue; // no fixed extent: leave it as drawn
      const plot = Math.min((gd.clientWidth - m.l - m.r) * aspect, window.innerHeight * spec.screen);
      const want = Math.round(Math.max(plot, 80) + m.t + m.b);
      // Streamlit fixes the height of the chart's boxes from the figure's: follow them up to the element
      for (let el = gd.parentElement; el; el = el.parentElement) {
        if (el.style.height !== `${want}px`) el.style.height = `${want}px`;
        if (el.classList.contains("stElementContainer")) { el.style.flex = `0 0 ${want}px`; break; }
      }
      if (!(Math.abs((L.height || 0) - want) <= 3)) window.Plotly.relayout(gd, { height: want });
    }
  };
  reg.resize?.disconnect();
  reg.resize = new ResizeObserver(() => requestAnimationFrame(fit));
  reg.mutation?.disconnect();
  reg.mutation = new MutationObserver(() => {
    for (const el of document.querySelectorAll('[class*="st-key-pick-"] .stPlotlyChart')) reg.resize.observe(el);
    requestAnimationFrame(fit);
  });
  reg.mutation.observe(document.body, { childList: true, subtree: true });
  fit();
}
