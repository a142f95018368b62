// The tables the store serves: grid, records, size, bounding box and digest. Every value from the
// store is put in as text (textContent), never as markup: a table's name or header is data.
"use strict";

function cell(text, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  td.textContent = text;
  return td;
}

function code(text) {
  const td = document.createElement("td"), c = document.createElement("code");
  c.textContent = text;
  td.append(c);
  return td;
}

(async () => {
  try {
    const tables = await apiJson("v1/surfaces");
    const body = document.querySelector("#tables tbody");
    if (!tables.length) {
      const td = cell("no tables under the store's root");
      td.colSpan = 8;
      body.append(document.createElement("tr"));
      body.lastChild.append(td);
    }
    for (const t of tables) {
      const tr = document.createElement("tr");
      if (t.status !== "ok") {
        const why = code(`unreadable: ${t.detail}`);
        why.colSpan = 7;
        tr.append(cell(t.name), why);
        body.append(tr);
        continue;
      }
      const h = await apiJson(`v1/surfaces/${encodeURIComponent(t.name)}`);
      const bytes = h.u_npts * h.v_npts * 14 * 8 * (1 + h.extras.length / 14);
      const bb = h.bbox ? h.bbox.map(c => "(" + c.map(x => Number(x).toPrecision(3)).join(", ") + ")").join(" - ") : "";
      const name = cell(""), a = document.createElement("a");
      a.textContent = t.name;
      a.href = withToken(`view/${encodeURIComponent(t.name)}`);
      name.append(a);
      tr.append(name, cell(`${h.u_npts} x ${h.v_npts}`, "num"), cell(`${h.n_rec_u} x ${h.n_rec_v}`, "num"),
                cell(`${h.u_pts} x ${h.v_pts}`, "num"), cell(h.extras.join(", ") || "-"),
                cell(formatBytes(bytes), "num"), code(bb), code(String(h.digest).slice(0, 19)));
      body.append(tr);
    }
  } catch (err) { showError(err); }
})();
