// Small canvas charts for the dashboard: lines over a time window (apply lag and rate per shard)
// and bars (a counter's series). Colours come from the page's CSS custom properties, so the
// charts follow the light or dark theme. Drawing only: the caller owns the data.

export const PALETTE = ["#2f6fdf", "#e0672b", "#2a9d63", "#b8408f", "#8a6d1f", "#0f8a9d", "#6b5bd6", "#c4383f"];

export function seriesColor(i) {
  return PALETTE[i % PALETTE.length];
}

function themeColor(canvas, name, fallback) {
  const v = getComputedStyle(canvas).getPropertyValue(name).trim();
  return v || fallback;
}

// Sizes the canvas's backing store to its CSS box at the device's pixel ratio; returns the 2D
// context scaled so that drawing uses CSS pixels, and the box's width and height.
// The plotting area inside a canvas of width x height: room on the left for the y labels and at the
// bottom for the time labels; the grid and label colours of the page's theme.
function plotBox(canvas, width, height) {
  return {
    left: 52,
    top: 10,
    right: width - 10,
    bottom: height - 22,
    grid: themeColor(canvas, "--grid", "#e3e6ea"),
    muted: themeColor(canvas, "--muted", "#667"),
  };
}

function prepare(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const width = Math.max(1, Math.round(canvas.clientWidth));
  const height = Math.max(1, Math.round(canvas.clientHeight));
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = `11px ${getComputedStyle(canvas).fontFamily}`;
  return { ctx, width, height };
}

// The smallest "round" number (1, 2, 2.5 or 5 times a power of ten) at or above v.
export function niceCeil(v) {
  if (!(v > 0)) return 1;
  const pow = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * pow >= v) return m * pow;
  }
  return 10 * pow;
}

const two = (n) => String(n).padStart(2, "0");

function clockLabel(t, seconds = false) {
  const d = new Date(t);
  return `${two(d.getHours())}:${two(d.getMinutes())}${seconds ? `:${two(d.getSeconds())}` : ""}`;
}

// The top of the y axis and its step: four equal steps of a round size, whole numbers when
// `integer` (ops and counts come in ones).
function yScale(max, integer) {
  let step = niceCeil(max / 4);
  if (integer) step = Math.max(1, Math.ceil(step));
  return { yMax: step * 4, step };
}

// Time ticks: the smallest round step that puts at most six ticks on the span.
function timeStep(spanMs) {
  for (const s of [5, 10, 15, 30, 60, 120, 300, 600]) {
    if (spanMs / (s * 1000) <= 6) return s * 1000;
  }
  return 1200000;
}

function drawFrame(ctx, box, { yMax, step }, formatY) {
  const { left, top, right, bottom } = box;
  ctx.strokeStyle = box.grid;
  ctx.fillStyle = box.muted;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let i = 0; i <= 4; i++) {
    const y = Math.round(bottom - ((bottom - top) * i) / 4) + 0.5;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(right, y);
    ctx.stroke();
    ctx.fillText(formatY(step * i), left - 6, y);
  }
}

// Lines of `series` ([{label, color, points: [{t, v}]}]) over [from, to] (ms). A pause longer than
// `gapMs` between two points is drawn as a gap, not a straight line across it.
export function drawLineChart(canvas, { series, from, to, formatY = String, gapMs = 10000, emptyText = "no data yet", integer = false }) {
  const { ctx, width, height } = prepare(canvas);
  const box = plotBox(canvas, width, height);
  let max = 0;
  let any = false;
  for (const s of series) {
    for (const p of s.points) {
      if (p.t < from || !Number.isFinite(p.v)) continue;
      any = true;
      max = Math.max(max, p.v);
    }
  }
  const scale = yScale(max, integer);
  const { yMax } = scale;
  drawFrame(ctx, box, scale, formatY);
  const x = (t) => box.left + ((t - from) / (to - from)) * (box.right - box.left);
  const y = (v) => box.bottom - (v / yMax) * (box.bottom - box.top);

  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillStyle = box.muted;
  const step = timeStep(to - from);
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
    if (x(t) - box.left < 16 || box.right - x(t) < 24) continue; // its label would hit the y labels or the edge
    ctx.fillText(clockLabel(t, step < 60000), x(t), box.bottom + 6);
  }
  if (!any) {
    ctx.textBaseline = "middle";
    ctx.fillText(emptyText, (box.left + box.right) / 2, (box.top + box.bottom) / 2);
    return;
  }
  ctx.lineWidth = 2;
  ctx.lineJoin = "round";
  for (const s of series) {
    ctx.strokeStyle = s.color;
    ctx.beginPath();
    let prev = null;
    for (const p of s.points) {
      if (p.t < from || !Number.isFinite(p.v)) {
        prev = null;
        continue;
      }
      if (prev && p.t - prev.t <= gapMs) ctx.lineTo(x(p.t), y(p.v));
      else ctx.moveTo(x(p.t), y(p.v));
      prev = p;
    }
    ctx.stroke();
    // A lone point (just after a gap) would otherwise not show.
    const last = s.points[s.points.length - 1];
    if (last && last.t >= from && Number.isFinite(last.v)) {
      ctx.fillStyle = s.color;
      ctx.beginPath();
      ctx.arc(x(last.t), y(last.v), 2.5, 0, 2 * Math.PI);
      ctx.fill();
    }
  }
}

// Bars of `points` ([{t, v}], in time order), labelled by `labelOf(t)` under some of them.
export function drawBarChart(canvas, { points, formatY = String, labelOf = clockLabel, color = PALETTE[0], integer = true }) {
  const { ctx, width, height } = prepare(canvas);
  const box = plotBox(canvas, width, height);
  const max = points.reduce((m, p) => Math.max(m, p.v), 0);
  const scale = yScale(max, integer);
  const { yMax } = scale;
  drawFrame(ctx, box, scale, formatY);
  if (!points.length) return;
  const slot = (box.right - box.left) / points.length;
  const barWidth = Math.max(1, slot * 0.75);
  ctx.fillStyle = color;
  points.forEach((p, i) => {
    const h = (p.v / yMax) * (box.bottom - box.top);
    ctx.fillRect(box.left + i * slot + (slot - barWidth) / 2, box.bottom - h, barWidth, h);
  });
  ctx.fillStyle = box.muted;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const every = Math.max(1, Math.ceil(points.length / Math.max(1, Math.floor((box.right - box.left) / 60))));
  points.forEach((p, i) => {
    if (i % every === 0) ctx.fillText(labelOf(p.t), box.left + i * slot + slot / 2, box.bottom + 6);
  });
}
