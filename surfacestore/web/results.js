// Plays a pressure-map series a scenario wrote (--out DIR under the store's root, its pressure.zarr):
// one heat map per compartment over the element grid, a slider and a play button.
"use strict";

async function main() {
  const path = new URLSearchParams(location.search).get("path");
  document.getElementById("home").href = withToken("./");
  if (!path) throw new Error("give the series as ?path=DIR/pressure.zarr (relative to the store's root)");
  document.getElementById("path").textContent = path;
  const s = await apiJson(`v1/results?path=${encodeURIComponent(path)}`);
  const names = Object.keys(s.compartments);
  let pmax = 0;
  for (const c of names) for (const frame of s.compartments[c].pressure_Pa) for (const row of frame)
    for (const p of row) if (p !== null) pmax = Math.max(pmax, p);
  pmax = pmax || 1;
  document.getElementById("max").textContent = (pmax / 1e6).toPrecision(3);
  document.getElementById("frame").textContent = s.frame;
  drawScale(document.getElementById("scale"));
  const maps = {};
  for (const c of names) {
    const fig = document.createElement("figure");
    const [nu, nv] = [s.compartments[c].pressure_Pa[0].length, s.compartments[c].pressure_Pa[0][0].length];
    const caption = document.createElement("figcaption"), canvas = document.createElement("canvas");
    caption.textContent = c;  // (a compartment's name is data: text, never markup)
    canvas.className = "map";
    canvas.width = nv;
    canvas.height = nu;
    fig.append(caption, canvas);
    document.getElementById("maps").append(fig);
    maps[c] = canvas.getContext("2d");
  }
  const slider = document.getElementById("time");
  slider.max = s.t_s.length - 1;
  function show(k) {
    document.getElementById("now").textContent = `t = ${s.t_s[k].toFixed(3)} s (${k + 1} of ${s.t_s.length})`;
    for (const c of names) {
      const frame = s.compartments[c].pressure_Pa[k], ctx = maps[c];
      const img = ctx.createImageData(frame[0].length, frame.length);
      frame.forEach((row, i) => row.forEach((p, j) => {
        const rgb = p === null ? [0.85, 0.85, 0.85] : viridis(p / pmax);
        img.data.set([...rgb.map(x => x * 255), 255], 4 * (i * row.length + j));
      }));
      ctx.putImageData(img, 0, 0);
    }
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  let timer = null;
  document.getElementById("play").addEventListener("click", () => {
    if (timer) { clearInterval(timer); timer = null; return; }
    timer = setInterval(() => { slider.value = (Number(slider.value) + 1) % s.t_s.length; show(Number(slider.value)); }, 50);
  });
  // start at the frame of the highest pressure
  let best = 0, bestP = -1;
  s.t_s.forEach((_, k) => { for (const c of names) for (const row of s.compartments[c].pressure_Pa[k]) for (const p of row)
    if (p !== null && p > bestP) { bestP = p; best = k; } });
  slider.value = best;
  show(best);
  document.body.dataset.ready = "1";
}

main().catch(showError);
