// Conv Explorer: pickable image charts as tall as their column allows (ui/fit_images.py mounts it).
export default function (component) {
  const reg = (window.__dcFitImages ??= {});
  reg.data = component.data;
  const fit = () => {
    for (const [name, spec] of Object.entries(reg.data.charts || {})) {
      const gd = [...document.querySelectorAll(`.st-key-pick-${name} .js-plotly-plot`)].find((g) => g._fullLayout);
      if (!gd || !window.Plotly) continue;
      const L = gd._fullLayout, m = L.margin;
      const span = (a) => Math.abs(a.range[1] - a.range[0]);
      const aspect = spec.aspect ?? span(L.yaxis) / span(L.xaxis);  // the figure's own extent
      const plot = Math.min((gd.clientWidth - m.l - m.r) * aspect, window.innerHeight * spec.screen);
      const want = Math.round(Math.max(plot, 80) + m.t + m.b);
      // Streamlit fixes the height of the chart's boxes from the figure's: follow them up to the element
      for (let el = gd.parentElement; el; el = el.parentElement) {
        if (el.style.height !== `${want}px`) el.style.height = `${want}px`;
        if (el.classList.contains("stElementContainer")) { el.style.flex = `0 0 ${want}px`; break; }
      }
      if (Math.abs(L.height - want) > 3) window.Plotly.relayout(gd, { height: want });
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
