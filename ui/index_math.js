// Conv Explorer: the JavaScript twin of gpuops/index_math.py (and of gpuops/kernels/index_math.cuh),
// so the browser can answer a hover from the geometry without asking the server. Each formula is
// written once here, as in the Python and CUDA files; tests/browser/test_e2e_index_math_js.py runs
// these in Chromium against the Python ones. Plain script (no import / export): ui/pick.py puts it
// in front of the pick bridge's module, and the test loads it as a script tag.
//
// A geometry `g` has the fields of gpuops.checks.WindowGeometry: H, W, KH, KW, stride_h, stride_w,
// pad_top, pad_bottom, pad_left, pad_right, dil_h, dil_w; H_out and W_out are computed here unless
// given (pooling's ceil_mode counts one more window than the formula).
const ConvIndexMath = (() => {
  // floor((size + pads - dilation*(k-1) - 1) / stride) + 1: how many windows fit along one axis
  const windowCount = (size, padBefore, padAfter, k, stride, dilation) =>
    Math.floor((size + padBefore + padAfter - dilation * (k - 1) - 1) / stride) + 1;

  // the input coordinate output o reads at tap k (may be padding)
  const inputCoord = (o, stride, pad, k, dilation) => o * stride - pad + k * dilation;

  // the output whose tap k reads input coordinate i, or -1: i = o*stride - pad + k*dilation solved
  const outputCoord = (i, stride, pad, k, dilation, count) => {
    const t = i + pad - k * dilation;
    if (t < 0 || t % stride !== 0) return -1;
    const o = t / stride;
    return o < count ? o : -1;
  };

  // reflect i (at most size-1 outside) into [0, size) without repeating the edge
  const reflectIndex = (i, size) => Math.abs(i) - Math.abs(i - (size - 1)) - i + (size - 1) + 0;

  // the padded coordinates that copy input coordinate i: i always, -i and 2(size-1)-i where the
  // padding reaches them; [[coordinate, present], ...] in that order
  const reflectCopies = (i, size, padBefore, padAfter) => [
    [i, true],
    [-i + 0, i >= 1 && i <= padBefore],
    [2 * (size - 1) - i, i <= size - 2 && i >= size - 1 - padAfter],
  ];

  const outputs = (g) => [
    g.H_out ?? windowCount(g.H, g.pad_top, g.pad_bottom, g.KH, g.stride_h, g.dil_h),
    g.W_out ?? windowCount(g.W, g.pad_left, g.pad_right, g.KW, g.stride_w, g.dil_w),
  ];

  // the tap k (0 <= k < taps) at which output o reads input coordinate i, or -1: inputCoord solved for k
  const tapOf = (o, stride, pad, i, dilation, taps) => {
    const t = i - o * stride + pad;
    if (t < 0 || t % dilation !== 0) return -1;
    const k = t / dilation;
    return k < taps ? k : -1;
  };

  // every (ki, kj, oh, ow) whose window reads input cell (ih, iw), in the kernels' loop order
  const windowsCovering = (g, ih, iw) => {
    const [Ho, Wo] = outputs(g), found = [];
    for (let ki = 0; ki < g.KH; ki++) {
      const oh = outputCoord(ih, g.stride_h, g.pad_top, ki, g.dil_h, Ho);
      if (oh < 0) continue;
      for (let kj = 0; kj < g.KW; kj++) {
        const ow = outputCoord(iw, g.stride_w, g.pad_left, kj, g.dil_w, Wo);
        if (ow >= 0) found.push([ki, kj, oh, ow]);
      }
    }
    return found;
  };

  // the taps of output (oh, ow): [[row, col, sourceRow, sourceCol], ...] in tap order; row/col in
  // padded coordinates, the source the cell the tap fetches (-1, -1: a zero of the padding)
  const receptiveField = (g, oh, ow, mode) => {
    const taps = [];
    for (let ki = 0; ki < g.KH; ki++) {
      const r = inputCoord(oh, g.stride_h, g.pad_top, ki, g.dil_h);
      for (let kj = 0; kj < g.KW; kj++) {
        const c = inputCoord(ow, g.stride_w, g.pad_left, kj, g.dil_w);
        const inside = r >= 0 && r < g.H && c >= 0 && c < g.W;
        if (mode === "reflect") taps.push([r, c, reflectIndex(r, g.H), reflectIndex(c, g.W)]);
        else taps.push([r, c, inside ? r : -1, inside ? c : -1]);
      }
    }
    return taps;
  };

  // every output that reads input cell (ih, iw), directly or (reflect) through a mirrored copy:
  // [[oh, ow], ...] sorted, each once
  const readers = (g, ih, iw, mode) => {
    const copies = (i, size, before, after) =>
      mode === "reflect" ? reflectCopies(i, size, before, after).filter(([, here]) => here).map(([v]) => v) : [i];
    const seen = new Set(), found = [];
    for (const vh of copies(ih, g.H, g.pad_top, g.pad_bottom))
      for (const vw of copies(iw, g.W, g.pad_left, g.pad_right))
        for (const [, , oh, ow] of windowsCovering(g, vh, vw)) {
          const key = `${oh},${ow}`;
          if (!seen.has(key)) {
            seen.add(key);
            found.push([oh, ow]);
          }
        }
    return found.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  };

  // ---- im2col / unfold: X_unroll's rows are (c, ki, kj), its columns the output positions ----------
  const unrollRow = (g, c, ki, kj) => (c * g.KH + ki) * g.KW + kj;
  const rowTap = (g, r) => [Math.floor(r / (g.KH * g.KW)), Math.floor(r / g.KW) % g.KH, r % g.KW];
  const unrollColumn = (g, oh, ow) => oh * outputs(g)[1] + ow;
  const columnPosition = (g, l) => [Math.floor(l / outputs(g)[1]), l % outputs(g)[1]];

  // where every entry of column l reads, in X_unroll's row order: [[c, row, col, inside], ...]
  const columnTaps = (C, g, l) => {
    const [oh, ow] = columnPosition(g, l), taps = [];
    for (let c = 0; c < C; c++)
      for (let ki = 0; ki < g.KH; ki++)
        for (let kj = 0; kj < g.KW; kj++) {
          const r = inputCoord(oh, g.stride_h, g.pad_top, ki, g.dil_h);
          const q = inputCoord(ow, g.stride_w, g.pad_left, kj, g.dil_w);
          taps.push([c, r, q, r >= 0 && r < g.H && q >= 0 && q < g.W]);
        }
    return taps;
  };

  // every X_unroll entry [row, column] that copies input cell (c, ih, iw)
  const copiesOf = (C, g, c, ih, iw) =>
    windowsCovering(g, ih, iw).map(([ki, kj, oh, ow]) => [unrollRow(g, c, ki, kj), unrollColumn(g, oh, ow)]);

  // ---- backward: who sends a gradient where ---------------------------------------------------------
  // dX[ih, iw] gathers dY[oh, ow] * w[ki, kj]: [[oh, ow, ki, kj, flipped ki, flipped kj], ...]
  const gradientSources = (g, ih, iw) =>
    windowsCovering(g, ih, iw)
      .map(([ki, kj, oh, ow]) => [oh, ow, ki, kj, g.KH - 1 - ki, g.KW - 1 - kj])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2] || a[3] - b[3]);

  // dY[oh, ow] is added into dX at the taps that read a real cell: [[ih, iw, ki, kj], ...]
  const scatterTargets = (g, oh, ow) =>
    receptiveField(g, oh, ow, "zeros")
      .map(([r, c, sr], t) => [r, c, Math.floor(t / g.KW), t % g.KW, sr])
      .filter((row) => row[4] >= 0)
      .map((row) => row.slice(0, 4));

  // dW[ki, kj] sums dY[oh, ow] * x[ih, iw] over these: [[oh, ow, ih, iw], ...]
  const weightPairs = (g, ki, kj) => {
    const [Ho, Wo] = outputs(g), pairs = [];
    for (let oh = 0; oh < Ho; oh++) {
      const ih = inputCoord(oh, g.stride_h, g.pad_top, ki, g.dil_h);
      if (ih < 0 || ih >= g.H) continue;
      for (let ow = 0; ow < Wo; ow++) {
        const iw = inputCoord(ow, g.stride_w, g.pad_left, kj, g.dil_w);
        if (iw >= 0 && iw < g.W) pairs.push([oh, ow, ih, iw]);
      }
    }
    return pairs;
  };

  // ---- reflect padding on its own: padded coordinates start at 0; pads = [left, right, top, bottom] --
  const padSource = (H, W, pads, oy, ox) => [reflectIndex(oy - pads[2], H), reflectIndex(ox - pads[0], W)];

  // every padded cell that copies input cell (y, x), itself included, row-major
  const padCopies = (H, W, pads, y, x) => {
    const along = (i, size, before, after) =>
      reflectCopies(i, size, before, after).filter(([, here]) => here).map(([v]) => v + before).sort((a, b) => a - b);
    const rows = along(y, H, pads[2], pads[3]), cols = along(x, W, pads[0], pads[1]);
    return rows.flatMap((r) => cols.map((c) => [r, c]));
  };

  // ---- grouped channels: channel i of one side (groups of perFrom) meets this group on the other
  const groupMembers = (i, perFrom, perTo) => {
    const group = Math.floor(i / perFrom);
    return Array.from({ length: perTo }, (_, k) => group * perTo + k);
  };

  return { windowCount, inputCoord, outputCoord, reflectIndex, reflectCopies, windowsCovering, receptiveField, readers, outputs, tapOf,
           unrollRow, rowTap, unrollColumn, columnPosition, columnTaps, copiesOf,
           gradientSources, scatterTargets, weightPairs, padSource, padCopies, groupMembers };
})();
