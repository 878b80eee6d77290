// Conv Explorer: what hovering a cell outlines, answered in the browser from a geometry (no rerun, any
// size). ui/pick.py sends each chart's rules (built by ui/hover.py); a rule names what the hovered
// cell is (its `kind`), the geometry, and where to outline the cells it maps to, as [chart, panel]
// pairs. Every index formula comes from ConvIndexMath (ui/index_math.js), loaded just before this;
// this file only says which formula answers which figure. Plain script, like index_math.js.
const HoverRules = (() => {
  const M = ConvIndexMath;
  const inGrid = (r, c, rows, cols) => r >= 0 && c >= 0 && r < rows && c < cols;

  // cells: [[row, col], ...] outlined on every [chart, panel] of `where`, into `out`
  const put = (out, where, cells) => {
    for (const [chart, panel] of where || [])
      for (const [r, c] of cells) (out[chart] ??= []).push([panel, r, c]);
    return out;
  };

  const kinds = {
    // an output pixel: its window's taps (padding included unless `inside`), and with reflect
    // padding the cells those copy; on `target`, or on every place of `targets` (panel "*": the
    // hovered one, for a layer whose channels are panels)
    taps: (rule, r, c, panel) => {
      const [Ho, Wo] = M.outputs(rule.g);
      if (!inGrid(r, c, Ho, Wo)) return null;
      const cells = [];
      for (const [tr, tc, sr, sc] of M.receptiveField(rule.g, r, c, rule.mode)) {
        if (rule.inside && (sr < 0 || sr !== tr || sc !== tc)) continue;  // a padding tap: (-1, -1) too
        cells.push([tr, tc]);
        if (sr >= 0 && (sr !== tr || sc !== tc)) cells.push([sr, sc]);
      }
      const where = (rule.targets || [rule.target]).map(([chart, p]) => [chart, p === "*" ? panel : p]);
      return put({}, where, cells);
    },
    // an input cell: every output whose window reads it, on `target` or every place of `targets`
    readers: (rule, r, c) => {
      if (!inGrid(r, c, rule.g.H, rule.g.W)) return null;
      return put({}, rule.targets || [rule.target], M.readers(rule.g, r, c, rule.mode));
    },
    // a weight (i, j) of the kernel: the cell it multiplies for output `out`
    kernel_taps: (rule, i, j) => {
      const g = rule.g, [oh, ow] = rule.out;
      if (!inGrid(i, j, g.KH, g.KW)) return null;
      const cell = [M.inputCoord(oh, g.stride_h, g.pad_top, i, g.dil_h), M.inputCoord(ow, g.stride_w, g.pad_left, j, g.dil_w)];
      return put({}, rule.targets, [cell]);
    },
    // a cell around output `out`'s window: the weight that reads it, and a mirrored padding cell
    // the cell it copies
    tap_of: (rule, r, c) => {
      const g = rule.g, [oh, ow] = rule.out, out = {};
      const i = M.tapOf(oh, g.stride_h, g.pad_top, r, g.dil_h, g.KH);
      const j = M.tapOf(ow, g.stride_w, g.pad_left, c, g.dil_w, g.KW);
      if (i >= 0 && j >= 0) put(out, [rule.kernel], [[i, j]]);
      const padded = inGrid(r + g.pad_top, c + g.pad_left, g.H + g.pad_top + g.pad_bottom, g.W + g.pad_left + g.pad_right);
      if (rule.mode === "reflect" && padded && !inGrid(r, c, g.H, g.W))
        put(out, rule.sources, [[M.reflectIndex(r, g.H), M.reflectIndex(c, g.W)]]);
      return Object.keys(out).length ? out : null;
    },
    // an input cell of channel panels.indexOf(panel): its copies in X_unroll
    unroll_copies: (rule, r, c, panel) => {
      const ch = rule.panels.indexOf(panel);
      if (ch < 0 || !inGrid(r, c, rule.g.H, rule.g.W)) return null;
      return put({}, [rule.target], M.copiesOf(rule.C, rule.g, ch, r, c));
    },
    // entry (r, l) of a matrix of `height` rows whose columns are X_unroll's: the cells column l
    // copies, whole columns l of `columns` ([chart, panel, height]) and whole rows r of `rows`
    // ([chart, panel, width])
    unroll_column: (rule, r, l) => {
      const g = rule.g, [Ho, Wo] = M.outputs(g);
      if (!inGrid(r, l, rule.height, Ho * Wo)) return null;
      const out = {};
      for (const [ch, row, col, inside] of M.columnTaps(rule.C, g, l))
        if (inside) put(out, [[rule.inputs, rule.panels[ch]]], [[row, col]]);
      for (const [chart, panel, n] of rule.columns || []) put(out, [[chart, panel]], Array.from({ length: n }, (_, k) => [k, l]));
      for (const [chart, panel, n] of rule.rows || []) put(out, [[chart, panel]], Array.from({ length: n }, (_, k) => [r, k]));
      return out;
    },
    // entry (r, pos) of unfold's matrix window (columns `window`): the pixel it copies
    unfold_entry: (rule, r, pos) => {
      const g = rule.g, l = rule.window[pos];
      if (l === undefined || r < 0 || r >= rule.C * g.KH * g.KW) return null;
      const [, ki, kj] = M.rowTap(g, r), [oh, ow] = M.columnPosition(g, l);
      const y = M.inputCoord(oh, g.stride_h, g.pad_top, ki, g.dil_h), x = M.inputCoord(ow, g.stride_w, g.pad_left, kj, g.dil_w);
      return inGrid(y, x, g.H, g.W) ? put({}, rule.targets, [[y, x]]) : null;
    },
    // a pixel: the entries of the matrix window (columns `window`) that copy it
    unfold_pixel: (rule, y, x) => {
      const g = rule.g;
      if (!inGrid(y, x, g.H, g.W)) return null;
      const cells = [];
      for (const [ki, kj, oh, ow] of M.windowsCovering(g, y, x)) {
        const pos = rule.window.indexOf(M.unrollColumn(g, oh, ow));
        if (pos >= 0) for (let c = 0; c < rule.C; c++) cells.push([M.unrollRow(g, c, ki, kj), pos]);
      }
      return put({}, [rule.target], cells);
    },
    // a cell of the reflect-padded grid: the input cell it copies
    pad_source: (rule, oy, ox) => {
      const [l, r, t, b] = rule.pads;
      if (!inGrid(oy, ox, rule.H + t + b, rule.W + l + r)) return null;
      return put({}, rule.targets, [M.padSource(rule.H, rule.W, rule.pads, oy, ox)]);
    },
    // a cell of a padded image drawn alone: its source and every other copy of that source
    pad_mirror: (rule, oy, ox) => {
      const [l, r, t, b] = rule.pads;
      if (!inGrid(oy, ox, rule.H + t + b, rule.W + l + r)) return null;
      const [y, x] = M.padSource(rule.H, rule.W, rule.pads, oy, ox);
      return put({}, rule.targets, M.padCopies(rule.H, rule.W, rule.pads, y, x));
    },
    // an input cell: the padded cells that copy it, and the same cell on `same`
    pad_copies: (rule, y, x) => {
      if (!inGrid(y, x, rule.H, rule.W)) return null;
      return put(put({}, rule.targets, M.padCopies(rule.H, rule.W, rule.pads, y, x)), rule.same, [[y, x]]);
    },
    // dX[ih, iw]: the output gradients it gathers, the taps and the flipped taps
    grad_sources: (rule, r, c) => {
      if (!inGrid(r, c, rule.g.H, rule.g.W)) return null;
      const rows = M.gradientSources(rule.g, r, c), out = {};
      put(out, rule.outputs, rows.map((s) => s.slice(0, 2)));
      put(out, rule.taps, rows.map((s) => s.slice(2, 4)));
      return put(out, rule.flipped, rows.map((s) => s.slice(4, 6)));
    },
    // dY[oh, ow]: the input cells it is added into, and the taps
    scatter: (rule, r, c) => {
      const [Ho, Wo] = M.outputs(rule.g);
      if (!inGrid(r, c, Ho, Wo)) return null;
      const rows = M.scatterTargets(rule.g, r, c);
      return put(put({}, rule.inputs, rows.map((s) => s.slice(0, 2))), rule.taps, rows.map((s) => s.slice(2, 4)));
    },
    // dW[ki, kj]: the output gradients and the input cells it sums over
    weight_pairs: (rule, i, j) => {
      if (!inGrid(i, j, rule.g.KH, rule.g.KW)) return null;
      const rows = M.weightPairs(rule.g, i, j);
      return put(put({}, rule.outputs, rows.map((s) => s.slice(0, 2))), rule.inputs, rows.map((s) => s.slice(2, 4)));
    },
    // the channel view (panels: [inputs, bank, outputs] of one chart): an output map (or a filter
    // row m of the bank) lights its filter's row and the input channels it sums; an input channel c
    // its column of the bank and the output maps that read it
    channel_groups: (rule, r, c, panel) => {
      const { C_in, C_out, groups, chart } = rule, [inputs, bank, outputs] = rule.panels;
      const perIn = C_in / groups, perOut = C_out / groups, out = {};
      if (panel === inputs) {
        if (r !== 0 || c < 0 || c >= C_in) return null;
        const ms = M.groupMembers(c, perIn, perOut);
        return put(put(out, [[chart, bank]], ms.map((m) => [m, c])), [[chart, outputs]], ms.map((m) => [m, 0]));
      }
      if (r < 0 || r >= C_out || (panel === outputs ? c !== 0 : c < 0 || c >= C_in)) return null;
      const cs = M.groupMembers(r, perOut, perIn);
      if (panel === bank && !cs.includes(c)) return null;
      put(out, [[chart, bank]], cs.map((k) => [r, k]));
      put(out, [[chart, inputs]], cs.map((k) => [0, k]));
      return panel === bank ? put(out, [[chart, outputs]], [[r, 0]]) : out;
    },
  };

  // what hovering (panel, r, c) of a chart with these rules outlines: {chart: [[panel, r, c], ...]}
  // (null: nothing); the first rule made for the panel (or for any panel) answers
  const cells = (rules, panel, r, c) => {
    const rule = [].concat(rules || []).find((x) => !x.on || x.on === panel);
    const answer = rule && kinds[rule.kind];
    return answer ? answer(rule, r, c, panel) : null;
  };

  return { cells, kinds };
})();
