// Shared by the store's pages: the token (from the page's #token=... fragment, never sent to the
// server as part of an address), API requests, and NPY decoding (float64, C order).
"use strict";

const TOKEN = new URLSearchParams(location.hash.slice(1)).get("token");

function withToken(href) {
  return TOKEN ? href + "#token=" + encodeURIComponent(TOKEN) : href;
}

async function api(path) {
  const r = await fetch(path, {headers: TOKEN ? {Authorization: "Bearer " + TOKEN} : {}});
  if (!r.ok) {
    let detail = r.statusText;
    try { detail = (await r.json()).detail; } catch (e) { /* not JSON */ }
    throw new Error(`${path}: ${r.status} ${detail}`);
  }
  return r;
}

async function apiJson(path) {
  return (await api(path)).json();
}

// An NPY body: {shape, data: Float64Array}.
async function apiNpy(path) {
  const r = await api(path);
  const buf = await r.arrayBuffer();
  const bytes = new Uint8Array(buf);
  const major = bytes[6];
  const hlen = major === 1 ? new DataView(buf).getUint16(8, true) : new DataView(buf).getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(start, start + hlen));
  if (!header.includes("'<f8'")) throw new Error(`${path}: not a float64 array`);
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(",").filter(s => s.trim()).map(Number);
  return {shape, data: new Float64Array(buf, start + hlen), headers: r.headers};
}

function showError(err) {
  const box = document.getElementById("error");
  box.textContent = String(err.message || err);
  box.hidden = false;
}

// Viridis, 9 stops (matplotlib's), t in [0, 1].
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129],
                 [92, 200, 99], [170, 220, 50], [253, 231, 37]];
function viridis(t) {
  t = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const k = Math.min(VIRIDIS.length - 2, Math.floor(t)), f = t - k;
  return VIRIDIS[k].map((c, i) => (c + f * (VIRIDIS[k + 1][i] - c)) / 255);
}

// A colour scale (viridis, left to right) on a canvas.
function drawScale(canvas) {
  const ctx = canvas.getContext("2d");
  for (let x = 0; x < canvas.width; x++) {
    ctx.fillStyle = `rgb(${viridis(x / (canvas.width - 1)).map(c => c * 255).join(",")})`;
    ctx.fillRect(x, 0, 1, canvas.height);
  }
}

function formatBytes(n) {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let k = 0;
  while (n >= 1000 && k < units.length - 1) { n /= 1000; k++; }
  return `${n.toFixed(n < 10 && k ? 1 : 0)} ${units[k]}`;
}
