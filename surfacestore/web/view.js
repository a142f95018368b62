// The 3D view of one table: a preview of the surface (about 160 points a side, from
// /v1/surfaces/NAME/preview), shaded, with every record a checkerboard square and its borders drawn,
// coloured by an extra field when one is chosen. Drag to orbit, wheel to zoom. Plain WebGL 1.
"use strict";

const NAME = decodeURIComponent(location.pathname.split("/").pop());
const SIDE = 160;

const VS = `
attribute vec3 pos; attribute vec3 nrm; attribute vec3 col;
uniform mat4 mvp; uniform mat4 rot; uniform float lift;
varying vec3 vN; varying vec3 vC;
void main() {
  gl_Position = mvp * vec4(pos, 1.0);
  gl_Position.z -= lift * gl_Position.w;   // the record borders a hair in front of the surface they lie on
  vN = (rot * vec4(nrm, 0.0)).xyz; vC = col;
}`;
const FS = `
precision mediump float;
varying vec3 vN; varying vec3 vC; uniform float lit;
void main() {
  vec3 n = normalize(vN);
  float d = abs(dot(n, normalize(vec3(0.3, 0.5, 1.0))));   // two-sided: both faces lit
  gl_FragColor = vec4(vC * mix(1.0, 0.25 + 0.75 * d, lit), 1.0);
}`;

function mat4Mul(a, b) {
  const o = new Float32Array(16);
  for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) {
    let s = 0;
    for (let k = 0; k < 4; k++) s += a[k * 4 + j] * b[i * 4 + k];
    o[i * 4 + j] = s;
  }
  return o;
}
function rotation(yaw, pitch) {  // column-major: yaw about y, then pitch about x
  const cy = Math.cos(yaw), sy = Math.sin(yaw), cp = Math.cos(pitch), sp = Math.sin(pitch);
  const ry = [cy, 0, -sy, 0, 0, 1, 0, 0, sy, 0, cy, 0, 0, 0, 0, 1];
  const rx = [1, 0, 0, 0, 0, cp, sp, 0, 0, -sp, cp, 0, 0, 0, 0, 1];
  return mat4Mul(rx, ry);
}
function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
  return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
}
function translation(x, y, z) {
  return new Float32Array([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, x, y, z, 1]);
}

function program(gl) {
  const p = gl.createProgram();
  for (const [type, src] of [[gl.VERTEX_SHADER, VS], [gl.FRAGMENT_SHADER, FS]]) {
    const s = gl.createShader(type);
    gl.shaderSource(s, src);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
    gl.attachShader(p, s);
  }
  gl.linkProgram(p);
  return p;
}

function buffer(gl, data, target = gl.ARRAY_BUFFER) {
  const b = gl.createBuffer();
  gl.bindBuffer(target, b);
  gl.bufferData(target, data, gl.STATIC_DRAW);
  return b;
}

async function main() {
  document.getElementById("title").textContent = NAME;
  document.getElementById("home").href = withToken("../");
  const h = await apiJson(`../v1/surfaces/${encodeURIComponent(NAME)}`);
  const select = document.getElementById("field");
  for (const f of ["records", ...h.extras]) select.add(new Option(f, f));
  const wanted = new URLSearchParams(location.search).get("field");
  if (wanted && h.extras.includes(wanted)) select.value = wanted;
  else if (h.extras.length) select.value = h.extras[0];
  const pts = await apiNpy(`../v1/surfaces/${encodeURIComponent(NAME)}/preview?n=${SIDE}`);
  const [nu, nv] = pts.shape, P = pts.data;
  const [su, sv] = pts.headers.get("x-preview-step").split(",").map(Number);
  const rows = Array.from({length: nu}, (_, k) => Math.min(k * su, h.u_npts - 1));
  const cols = Array.from({length: nv}, (_, k) => Math.min(k * sv, h.v_npts - 1));
  document.getElementById("info").textContent =
    `${h.u_npts} x ${h.v_npts} points, ${h.n_rec_u} x ${h.n_rec_v} records; showing ${nu} x ${nv}`;

  // positions centred on the bounding box, scaled to unit size; normals as stored
  const n = nu * nv, pos = new Float32Array(3 * n), nrm = new Float32Array(3 * n);
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  for (let k = 0; k < n; k++) for (let c = 0; c < 3; c++) {
    const x = P[k * 14 + 2 + c];
    lo[c] = Math.min(lo[c], x); hi[c] = Math.max(hi[c], x);
  }
  const mid = lo.map((l, c) => (l + hi[c]) / 2);
  const size = Math.max(...hi.map((x, c) => x - lo[c])) || 1;
  for (let k = 0; k < n; k++) for (let c = 0; c < 3; c++) {
    pos[3 * k + c] = (P[k * 14 + 2 + c] - mid[c]) / size;
    nrm[3 * k + c] = P[k * 14 + 5 + c];
  }
  const rowRec = rows.map(r => Math.floor(r / h.u_pts)), colRec = cols.map(c => Math.floor(c / h.v_pts));
  const record = k => [rowRec[Math.floor(k / nv)], colRec[k % nv]];

  // triangles of the grid; the record borders as lines along the first samples of each new record
  const tri = [], lines = [];
  for (let i = 0; i + 1 < nu; i++) for (let j = 0; j + 1 < nv; j++) {
    const a = i * nv + j, b = a + 1, c = a + nv, d = c + 1;
    tri.push(a, c, b, b, c, d);
  }
  for (let j = 0; j + 1 < nv; j++) if (colRec[j + 1] !== colRec[j])
    for (let i = 0; i + 1 < nu; i++) lines.push(i * nv + j + 1, (i + 1) * nv + j + 1);
  for (let i = 0; i + 1 < nu; i++) if (rowRec[i + 1] !== rowRec[i])
    for (let j = 0; j + 1 < nv; j++) lines.push((i + 1) * nv + j, (i + 1) * nv + j + 1);
  const Index = n > 65535 ? Uint32Array : Uint16Array;

  const canvas = document.getElementById("canvas");
  const gl = canvas.getContext("webgl", {antialias: false, depth: true, preserveDrawingBuffer: true});
  if (!gl) throw new Error("this browser has no WebGL");
  if (Index === Uint32Array && !gl.getExtension("OES_element_index_uint")) throw new Error("too many points");
  const prog = program(gl);
  gl.useProgram(prog);
  const col = new Float32Array(3 * n);
  const colBuf = gl.createBuffer();
  const black = new Float32Array(3 * n);
  const bufs = {pos: buffer(gl, pos), nrm: buffer(gl, nrm), black: buffer(gl, black)};
  const triBuf = buffer(gl, new Index(tri), gl.ELEMENT_ARRAY_BUFFER);
  const lineBuf = buffer(gl, new Index(lines), gl.ELEMENT_ARRAY_BUFFER);

  async function colour() {
    const f = select.value, legend = document.getElementById("legend");
    if (f === "records") {
      for (let k = 0; k < n; k++) {
        const [ri, rj] = record(k), odd = (ri + rj) % 2;
        const c = odd ? [0.55, 0.68, 0.85] : [0.85, 0.78, 0.62];
        col.set(c, 3 * k);
      }
      legend.hidden = true;
    } else {
      const v = (await apiNpy(`../v1/surfaces/${encodeURIComponent(NAME)}/preview?n=${SIDE}&array=${f}`)).data;
      let a = Infinity, b = -Infinity;
      for (const x of v) if (Number.isFinite(x)) { a = Math.min(a, x); b = Math.max(b, x); }
      for (let k = 0; k < n; k++) col.set(Number.isFinite(v[k]) ? viridis((v[k] - a) / ((b - a) || 1)) : [0.6, 0.6, 0.6], 3 * k);
      document.getElementById("field-name").textContent = f;
      document.getElementById("lo").textContent = a.toPrecision(3);
      document.getElementById("hi").textContent = b.toPrecision(3);
      drawScale(document.getElementById("bar-scale"));
      legend.hidden = false;
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, colBuf);
    gl.bufferData(gl.ARRAY_BUFFER, col, gl.STATIC_DRAW);
    draw();
  }

  let yaw = 0.6, pitch = 0.5, dist = 2.2;
  function attrib(name, buf) {
    const loc = gl.getAttribLocation(prog, name);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf);
    gl.enableVertexAttribArray(loc);
    gl.vertexAttribPointer(loc, 3, gl.FLOAT, false, 0, 0);
  }
  function draw() {
    const w = canvas.clientWidth, hh = canvas.clientHeight;
    if (canvas.width !== w || canvas.height !== hh) { canvas.width = w; canvas.height = hh; }
    gl.viewport(0, 0, w, hh);
    gl.clearColor(1, 1, 1, 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    gl.depthFunc(gl.LEQUAL);
    const rot = rotation(yaw, pitch);
    // near and far planes hug the unit-sized surface: depth precision where it is needed
    const mvp = mat4Mul(perspective(0.8, w / hh, Math.max(0.01, dist - 1), dist + 1), mat4Mul(translation(0, 0, -dist), rot));
    gl.uniformMatrix4fv(gl.getUniformLocation(prog, "mvp"), false, mvp);
    gl.uniformMatrix4fv(gl.getUniformLocation(prog, "rot"), false, rot);
    attrib("pos", bufs.pos);
    attrib("nrm", bufs.nrm);
    attrib("col", colBuf);
    gl.uniform1f(gl.getUniformLocation(prog, "lit"), 1.0);
    gl.uniform1f(gl.getUniformLocation(prog, "lift"), 0.0);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, triBuf);
    gl.drawElements(gl.TRIANGLES, tri.length, Index === Uint32Array ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT, 0);
    attrib("col", bufs.black);
    gl.uniform1f(gl.getUniformLocation(prog, "lit"), 0.0);
    gl.uniform1f(gl.getUniformLocation(prog, "lift"), 0.002);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, lineBuf);
    gl.drawElements(gl.LINES, lines.length, Index === Uint32Array ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT, 0);
  }

  let drag = null;
  canvas.addEventListener("mousedown", e => { drag = [e.clientX, e.clientY]; canvas.style.cursor = "grabbing"; });
  window.addEventListener("mouseup", () => { drag = null; canvas.style.cursor = "grab"; });
  window.addEventListener("mousemove", e => {
    if (!drag) return;
    yaw += (e.clientX - drag[0]) * 0.01;
    pitch = Math.max(-1.5, Math.min(1.5, pitch + (e.clientY - drag[1]) * 0.01));
    drag = [e.clientX, e.clientY];
    draw();
  });
  canvas.addEventListener("wheel", e => { e.preventDefault(); dist = Math.max(0.3, Math.min(20, dist * Math.exp(e.deltaY * 0.001))); draw(); },
                          {passive: false});
  window.addEventListener("resize", draw);
  select.addEventListener("change", () => colour().catch(showError));
  await colour();
  document.body.dataset.ready = "1";
}

main().catch(showError);
