"""One validation page per source document: what it reports against what the scenarios and the
closed-form cases measure, from the recorded JSON (``docs/data/validation``), with plots.

The published values below are the documents' (see the scenarios' docstrings for the assumptions
where a document leaves a value out); every measured value comes from a record."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from docs.generate.data import load, missing, provenance, table

#: Bei & Fregly 2004, Table 4: the artificial knee at the instant of maximum axial load (linear material)
TABLE_4_LINEAR = {"medial": {"force_N": 1467, "torque_Nm": 35.82, "peak_pressure_Pa": 28.09e6,
                             "mean_pressure_Pa": 16.60e6, "area_m2": 88.37e-6},
                  "lateral": {"force_N": 623.3, "torque_Nm": 16.67, "peak_pressure_Pa": 17.07e6,
                              "mean_pressure_Pa": 9.030e6, "area_m2": 69.02e-6}}
#: the thesis' reported behaviours of the 3D knee (section 6.5.2)
THESIS_KNEE3D = {"R25": "first contact on the medial condyle", "R26": "six contacts: three medial, three lateral",
                 "R27": "internal rotation, largest at 70 deg of flexion",
                 "R28": "the MCL anterior fibres carry the largest ligament force above 30 deg"}
QUANTITIES = (("force_N", "contact force", "N", 1.0), ("torque_Nm", "contact torque", "N m", 1.0),
              ("peak_pressure_Pa", "peak pressure", "MPa", 1e-6), ("mean_pressure_Pa", "mean pressure", "MPa", 1e-6),
              ("area_m2", "contact area", "mm^2", 1e6))

Images = dict[str, bytes]


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _cases(prefixes: tuple[str, ...]) -> tuple[str, Images]:
    """The closed-form cases of ``simclient validate`` whose names start with ``prefixes``."""
    record = load("validation", "validate")
    if record is None:
        return missing("validation", "validate"), {}
    rows = [[f"`{c['name']}`", c["expected"], c["measured"], c["unit"], c["rel_error"],
             f"{c['tolerance']:g} ({c['tolerance_kind']})", c["passed"]]
            for c in record["result"]["cases"] if c["name"].startswith(prefixes)]
    text = ("Closed-form cases (`simclient validate`), each run through the real code:\n\n"
            + table(["case", "expected", "measured", "unit", "error", "tolerance", "passed"], rows)
            + "\n" + provenance(record) + "\n")
    return text, {}


def _record(out: list[str], name: str) -> dict[str, Any] | None:
    """The recorded validation result ``name``, or None with the page saying it was not measured."""
    record = load("validation", name)
    if record is None:
        out.append(missing("validation", name))
    return record


def _compartments(measured: dict[str, Any], reported: dict[str, Any], label: str) -> str:
    rows = []
    for key, name, unit, scale in QUANTITIES:
        for side in ("medial", "lateral"):
            m, r = measured[side][key] * scale, reported[side][key] * scale
            rows.append([f"{name}, {side}", unit, r, m, f"{(m - r) / r:+.1%}"])
    return table(["quantity", "unit", f"reported ({label})", "measured", "difference"], rows)


def thesis_chapter_6() -> tuple[str, Images]:
    out = ["# Thesis chapter 6: the bouncing ball and the 3D knee", "",
           "The thesis' section 6.5.1 drops a 20 mm ball (92 g, Hertz K = 5.5e9 N/m^1.5) on a plane and reports "
           "four impacts in 0.4 s of equal indentation (R21), independent of the table's resolution (R23); the "
           "closed forms are Hertz's indentation and contact time. Section 6.5.2 flexes a 3D knee to 80 deg and "
           "reports the behaviours R25-R28.", ""]
    images: Images = {}
    ball = _record(out, "bouncing-ball")
    if ball is not None:
        s = ball["result"]
        a = s["analytic"]
        out += ["## The bouncing ball", "",
                table(["quantity", "closed form / thesis", "measured"], [
                    ["impacts in 0.4 s (R21)", 4, s["impacts"]],
                    ["first impact (s)", a["first_impact"], s["impact_times_s"][0]],
                    ["impact speed (m/s)", a["impact_speed"], s["impact_velocities_m_s"][0]],
                    ["largest indentation, each impact (um)", a["max_indentation"] * 1e6,
                     ", ".join(f"{d * 1e6:.4f}" for d in s["max_indentation_m"])],
                    ["contact time (ms)", a["duration"] * 1e3, s["contact_durations_s"][0] * 1e3],
                    ["relative energy drift (no dissipation)", 0.0, s["energy_drift"]],
                    ["ground window re-centrings (3 x 9 records)", "(Table 6.3)", s["windows"]["ground"]["updates"]]]),
                "The indentation exceeds the closed form by gravity's work during the impact, which the closed "
                "form leaves out.", "", provenance(ball), ""]
    knee = _record(out, "knee3d")
    if knee is not None:
        s = knee["result"]
        out += ["## The 3D knee", "",
                table(["", "thesis", "shown by the run"], [[k, v, s["thesis"][k]] for k, v in THESIS_KNEE3D.items()]),
                f"First contact {s['first_contact']}; contact periods {s['contacts']['medial']} medial, "
                f"{s['contacts']['lateral']} lateral; largest ligament force {s['peak_ligament']}, above 30 deg "
                f"{s['peak_ligament_above_30_deg']}. With frictionless sphere-on-plane contacts, whose forces lie "
                "along the tibia's axis, nothing but the ligaments turns the tibia: the placements the thesis "
                "gives only in a figure decide R26-R28 (`simclient study knee3d-placement` runs 54 of them).", "",
                "![internal rotation](knee3d_rotation.png)", "", provenance(knee), ""]
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6, 3.2))
        rot = s["internal_rotation_deg"]
        ax.plot([float(k) for k in rot], list(rot.values()), "o-")
        ax.set_xlabel("flexion [deg]")
        ax.set_ylabel("internal rotation [deg]")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        images["validation/knee3d_rotation.png"] = _png(fig)
    text, _ = _cases(("hertz", "energy", "restitution", "graze", "terrain", "atlas"))
    out += ["## Closed forms", "", text]
    return "\n".join(out), images


def thesis_chapter_5() -> tuple[str, Images]:
    out = ["# Thesis chapter 5: the planar knee", "",
           "A femur profile on a tibial plateau profile (piecewise cubics through the thesis' points), four "
           "ligaments, a force pulse; the contact's indentation against the planar Hertz closed forms and the "
           "double-layer law's two regimes (R14).", ""]
    rec = _record(out, "knee2d")
    if rec is not None:
        s = rec["result"]
        out += [table(["quantity", "measured"], [
            ["contact periods", len(s["contact_periods"])],
            ["largest indentation (mm)", s["max_indentation_m"] * 1e3],
            ["largest contact force (N)", s["max_force_N"]],
            ["first impact's hysteresis (J, Hertz: none)", s["first_impact_hysteresis_J"]],
            *[[f"largest {n.upper()} force (N)", f] for n, f in s["max_ligament_force_N"].items()]]),
            provenance(rec), ""]
    text, _ = _cases(("planar", "double-layer"))
    return "\n".join(out + ["## Closed forms", "", text]), {}


def bei_fregly() -> tuple[str, Images]:
    out = ["# Bei & Fregly 2004: elastic-foundation contact", "",
           "The natural knee (Table 3: 1000 N at 30 deg of flexion on a real tibial cartilage, small and large "
           "strain) and the artificial knee (Table 4: a gait-like cycle, the instant of maximum axial load); "
           "the elastic-foundation closed forms. Both knees read tables fitted to the surfaces of "
           "`../shared/data`.", ""]
    images: Images = {}
    nat = _record(out, "natural-knee")
    if nat is not None:
        s = nat["result"]
        for strain in ("small", "large"):
            out += [f"## Natural knee, {strain} strain (Table 3)", "",
                    _compartments(s["strain"][strain]["compartments"], s["table_3"][strain], "Table 3")]
        out += ["The relative radii were chosen to give Table 3's small-strain areas (an assumption: the paper's "
                "femur is an MRI surface); the force split follows from where the load acts.", "",
                provenance(nat), ""]
    art = _record(out, "artificial-knee")
    if art is not None:
        s = art["result"]
        out += ["## Artificial knee, linear material (Table 4)", "",
                _compartments(s["compartments"], TABLE_4_LINEAR, "Table 4"),
                f"Largest force imbalance over the cycle: {s['gait']['max_force_imbalance']:.2g} of the load. "
                "The kinematics and load curves are stand-ins for the paper's fluoroscopy data (see the "
                "scenario's page).", "", provenance(art), ""]
    text, _ = _cases(("ef-",))
    out += ["## Closed forms", "", text]
    return "\n".join(out), images


def blankevoort() -> tuple[str, Images]:
    out = ["# Blankevoort et al. 1991: the quasi-static knee", "",
           "The envelope of passive motion (internal and external torque paths, flexion 0-95 deg) with a linear "
           "deformable layer; the paper reports the peak contact forces at 95 deg and where the largest stress "
           "occurs. The stand-in condyle and plateau geometry is an assumption (the paper's surfaces are "
           "polynomial fits not given in full).", ""]
    images: Images = {}
    rec = _record(out, "blankevoort")
    if rec is not None:
        s = rec["result"]
        at95, big = s["at_95_deg_internal"], s["largest_stress"]
        out += [table(["quantity", "paper", "measured"], [
            ["medial force at 95 deg, internal path (N)", at95["paper"]["medial_force_N"], at95["medial_force_N"]],
            ["lateral force at 95 deg, internal path (N)", at95["paper"]["lateral_force_N"], at95["lateral_force_N"]],
            ["largest stress: condyle", big["paper"]["condyle"], big["condyle"]],
            ["largest stress: path", big["paper"]["path"], big["path"]],
            ["largest stress: flexion (deg)", big["paper"]["flexion_deg"], big["flexion_deg"]],
            ["largest residual (N, N m)", "", f"{s['max_residual_N']:.2g}, {s['max_residual_Nm']:.2g}"]]),
            "![envelope](blankevoort_envelope.png)", "", provenance(rec), ""]
        plt = _pyplot()
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
        for path in ("internal", "external"):
            rows = [r for r in s["envelope"] if r["path"] == path]
            fl = [r["flexion_deg"] for r in rows]
            ax[0].plot(fl, [r["internal_rotation_deg"] for r in rows], label=path)
            ax[1].plot(fl, [r["medial_force_N"] for r in rows], label=f"medial, {path}")
            ax[1].plot(fl, [r["lateral_force_N"] for r in rows], "--", label=f"lateral, {path}")
        ax[1].plot([95, 95], [at95["paper"]["medial_force_N"], at95["paper"]["lateral_force_N"]], "k*", label="paper")
        ax[0].set(xlabel="flexion [deg]", ylabel="internal rotation [deg]")
        ax[1].set(xlabel="flexion [deg]", ylabel="contact force [N]")
        for a in ax:
            a.grid(alpha=0.3)
            a.legend(fontsize=7)
        fig.tight_layout()
        images["validation/blankevoort_envelope.png"] = _png(fig)
    text, _ = _cases(("blankevoort",))
    return "\n".join(out + ["## Closed forms", "", text]), images


def markus() -> tuple[str, Images]:
    out = ["# Markus et al. 2019: the prosthetic four-bar knee", "",
           "A four-bar prosthetic knee whose rubber stop meets the frame in a Flores contact; the paper gives its "
           "contact-force peaks only in a figure, so the checks are the model's own invariants: the links keep "
           "their lengths and the assembly closes.", ""]
    rec = load("validation", "prosthetic-knee")
    if rec is None:
        return "\n".join(out + [missing("validation", "prosthetic-knee")]), {}
    s = rec["result"]
    out += [table(["quantity", "measured"], [
        ["impacts of the stop", s["impacts"]], ["peak contact force (N)", s["peak_contact_force_N"]],
        ["at (s)", s["peak_time_s"]], ["largest penetration (mm)", s["max_penetration_m"] * 1e3],
        ["contact duration (s)", s["contact_duration_s"]],
        ["largest drift of a link's length (m)", s["max_link_length_drift_m"]],
        ["assembly residual (m)", s["assembly_residual_m"]]]), provenance(rec), ""]
    return "\n".join(out), {}


def argatov() -> tuple[str, Images]:
    out = ["# Argatov: thin-layer contact", "",
           "Closed forms of thin elastic and viscoelastic layers (incompressible, compressible, bonded) against "
           "the elastic foundation, and a ball dropped on a layer in dynamics (`layer-drop`) against the relaxed "
           "closed form.", ""]
    rec = _record(out, "layer-drop")
    if rec is not None:
        s = rec["result"]
        c = s["closed_form"]["relaxed"]
        out += ["## A ball on a layer", "", table(["quantity", "closed form", "measured"], [
            ["largest indentation (um)", c["max_indentation_m"] * 1e6, s["max_indentation_m"] * 1e6],
            ["contact time (ms)", c["contact_time_s"] * 1e3, s["contact_time_s"] * 1e3],
            ["restitution (elastic layer)", 1.0, s["restitution"]]]), provenance(rec), ""]
    text, _ = _cases(("argatov",))
    return "\n".join(out + ["## Closed forms", "", text]), {}


DOCUMENTS: dict[str, tuple[str, Callable[[], tuple[str, Images]]]] = {
    "thesis-chapter-6": ("Thesis chapter 6: ball and 3D knee", thesis_chapter_6),
    "thesis-chapter-5": ("Thesis chapter 5: planar knee", thesis_chapter_5),
    "bei-fregly-2004": ("Bei & Fregly 2004", bei_fregly),
    "blankevoort-1991": ("Blankevoort et al. 1991", blankevoort),
    "markus-2019": ("Markus et al. 2019", markus),
    "argatov": ("Argatov: thin layers", argatov),
}


def pages() -> tuple[dict[str, str], Images]:
    """``validation/DOC.md`` per source document, an index, and their plots."""
    out, images = {}, {}
    index = ["# Validation", "", "What each source document reports against what this project measures. The pages "
             "are generated from the JSON the scenarios and `simclient validate` print, kept in `docs/data/validation` "
             "with the machine and date they were measured on; `python3 dev.py docs --record` measures them again.", ""]
    for name, (title, build) in DOCUMENTS.items():
        text, imgs = build()
        out[f"validation/{name}.md"] = text
        images.update(imgs)
        index.append(f"- [{title}]({name}.md)")
    out["validation/index.md"] = "\n".join(index) + "\n"
    return out, images
