#!/usr/bin/env python3
"""Generates the per-signature code of mpi-advance's edges from calls.txt (one row per
collective; every row has six forms). Run by src/CMakeLists.txt at configure time:

    generate.py TABLE HEADER_TEMPLATE OUT_HEADER OUT_DIR

OUT_HEADER: include/mpi_advance.h.in with each line "@forms PATTERN...@" replaced by the
prototypes of the forms whose MPIA_ names match a pattern (fnmatch), and "@mpix_names@" by the
MPIX_ -> MPIA_ macros of every form. OUT_DIR gets the .inc files that the hand-written sources
include where their per-form code goes:
  api_forms.inc         src/api/c_api.cpp: the C entry points MPIA_<form>
  preload_forms.h       src/preload/preload.hpp: the drop-in's dispatchers' prototypes
  preload_forms.inc     src/preload/preload.cpp: the form table, dispatchers, MPI_ interposers
  preload_ompi_ext.inc  src/preload/init.cpp: Open MPI 4.1's MPIX_<coll>_init interposers
  system_forms.inc      src/operation/system.cpp: the MPI library's own function of each form
  preload_creators.inc, fortran_creators.inc (from creators.txt, beside TABLE)
                        src/preload/: the C and Fortran interposers of MPI_Comm_dup & co.
  fortran_forms.inc     src/preload/fortran.c: the drop-in's Fortran entry points (int forms)
  fortran_requests.inc  src/preload/fortran.c: the manglings of its Fortran request calls
  glue_forms.inc        src/fortran/mpia_fortran_glue.c: the module's C side (int forms)
  module_public.inc, module_interfaces.inc, module_procedures.inc
                        src/fortran/mpi_advance.F90: the module's procedures (int forms)
A file is rewritten only when its text changes, so an unchanged table rebuilds nothing."""

import fnmatch
import os
import sys

KINDS = ("blocking", "nonblocking", "persistent")


class Form:
    def __init__(self, row, kind, large):
        self.base, self.shape, self.coll, self.int_displ = row
        self.kind, self.large = kind, large
        b = self.base
        name = {"blocking": b, "nonblocking": "I" + b[0].lower() + b[1:],
                "persistent": b + "_init"}[kind]
        self.name = name + ("_c" if large else "")
        self.lower = self.name.lower()
        self.neighbor = self.coll == "neighbor"

    # (type, name) of the C parameters; request: the request's type, or None for none.
    def params(self, request):
        count = "MPI_Count" if self.large else "int"
        displ = "MPI_Aint" if self.large else self.int_displ
        p = []
        for side, buf in (("send", "const void*"), ("recv", "void*")):
            d = "sdispls" if side == "send" else "rdispls"
            p.append((buf, side + "buf"))
            if self.shape == "regular":
                p += [(count, side + "count"), ("MPI_Datatype", side + "type")]
            else:
                p += [("const %s" % count, side + "counts[]"), ("const %s" % displ, d + "[]")]
                p.append(("const MPI_Datatype", side + "types[]") if self.shape == "w" else
                         ("MPI_Datatype", side + "type"))
        p.append(("MPI_Comm", "comm"))
        if self.kind == "persistent":
            p.append(("MPI_Info", "info"))
        if self.kind != "blocking" and request:
            p.append((request + "*", "request"))
        return p

    def args(self, request=True):
        return [n.rstrip("[]") for _, n in self.params("R" if request else None)]


def table_lines(path):
    """The lines of a table (calls.txt, creators.txt): comments ('#' on) and blank lines dropped."""
    with open(path) as f:
        return [t for t in (line.split("#", 1)[0].strip() for line in f) if t]


def read_table(path):
    rows = []
    for line in table_lines(path):
        line = line.split()
        if len(line) != 4 or line[1] not in ("regular", "v", "w") or \
                line[2] not in ("alltoall", "alltoallv", "neighbor"):
            sys.exit("generate.py: bad row in %s: %s" % (path, " ".join(line)))
        rows.append(tuple(line))
    return [Form(r, k, l) for r in rows for k in KINDS for l in (False, True)]


def wrap(head, items, tail, indent=None, width=100):
    """head(item, item, ...)tail, wrapped at width, continuation lines under the first item."""
    pad = " " * (indent if indent is not None else len(head))
    lines, cur = [], head
    for i, it in enumerate(items):
        piece = it + (")" + tail if i == len(items) - 1 else ",")
        if len(cur) + len(piece) + (0 if cur.endswith("(") else 1) > width and \
                not cur.endswith("("):
            lines.append(cur)
            cur = pad + piece
        else:
            cur += ("" if cur.endswith("(") else " ") + piece
    if not items:
        cur += ")" + tail
    lines.append(cur)
    return "\n".join(lines)


def c_decl(ret, name, params, tail):
    return wrap("%s %s(" % (ret, name), ["%s %s" % (t, n) for t, n in params], tail)


def call(name, args, tail=";", indent=""):
    return wrap(indent + name + "(", args, tail, indent=len(indent) + 4)


# --- the header -------------------------------------------------------------------------------

def header(forms, template):
    out = []
    for line in template.splitlines():
        s = line.strip()
        if s == "@mpix_names@":
            out += ["#define MPIX_%s MPIA_%s" % (f.name, f.name) for f in forms]
        elif s.startswith("@forms ") and s.endswith("@"):
            pats = s[len("@forms "):-1].split()
            chosen = [f for f in forms if any(fnmatch.fnmatchcase("MPIA_" + f.name, p)
                                               for p in pats)]
            if not chosen:
                sys.exit("generate.py: no form matches %s" % s)
            out += [c_decl("int", "MPIA_" + f.name, f.params("MPIX_Request"), ";")
                    for f in chosen]
        else:
            out.append(line)
    return "\n".join(out) + "\n"


# --- the C API ----------------------------------------------------------------------------------

def shape_args(f, prefix):
    a = f.args()
    data = a[:8] if f.shape != "regular" else a[:6]
    maker = {"regular": "regular_args", "v": "v_args", "w": "w_args"}[f.shape]
    return call(prefix + maker, data, "", indent="")


COLL = {"alltoall": "Collective::Alltoall", "alltoallv": "Collective::Alltoallv",
        "neighbor": "Collective::NeighborAlltoallv"}


def api(forms):
    out = ["// Generated by src/bindings/generate.py from calls.txt: do not edit."]
    for f in forms:
        args = shape_args(f, "")
        lead = {"blocking": "comm", "nonblocking": "comm, request",
                "persistent": "comm, info, request"}[f.kind]
        out.append("")
        out.append(c_decl("MPIA_API int", "MPIA_" + f.name, f.params("MPIX_Request"), " {"))
        tmpl = COLL[f.coll] + (", %s" % str(f.large).lower() if f.kind == "blocking" else "")
        out.append("  return api_%s<%s>(%s,\n      %s);" % (f.kind, tmpl, lead,
                                                         args.replace("\n", "\n      ")))
        out.append("}")
    return "\n".join(out) + "\n"


# --- the MPI library's own calls (operation/system.cpp) ------------------------------------------

def system_arg(f, name):
    """A form's argument as SystemCall holds it: s and r are its send and receive Side."""
    side = "s." if name.startswith("send") or name == "sdispls" else "r."
    if name in ("sendbuf", "recvbuf"):
        return side + "buf"
    if name in ("sendcount", "recvcount"):
        return side + ("ccount" if f.large else "count")
    if name in ("sendtype", "recvtype"):
        return side + "type"
    if name in ("sendcounts", "recvcounts"):
        return side + ("ccounts" if f.large else "counts") + ".data()"
    if name in ("sdispls", "rdispls"):
        return side + ("adispls" if f.large or f.int_displ != "int" else "displs") + ".data()"
    if name in ("sendtypes", "recvtypes"):
        return side + "types.data()"
    return {"comm": "comm", "info": "MPI_INFO_NULL", "request": "request"}[name]


def system_slot(f, prefix="PMPI_"):
    req = " request" if f.kind != "blocking" else ""
    head = "      [](const Side& s, const Side& r, MPI_Comm comm, MPI_Request*%s) {" % req
    body = call("return " + prefix + f.name, [system_arg(f, n) for n in f.args()],
                indent="        ")
    return head + "\n" + body + "\n      },"


def system_forms(forms):
    """Per row, the MPI library's function of each form, one slot per form as Open MPI's coll.h
    keeps them: blocking, nonblocking and persistent, int ([0]) and large-count ([1]). A null
    slot where the MPI has none: its persistent forms where it has neither MPI-4's nor Open MPI
    4.1's pcollreq extension (not that extension's MPIX_Neighbor_alltoall(v)_init, which fails
    with MPI_ERR_ARG on a rank without neighbors), its _c forms before MPI-4."""
    out = ["// Generated by src/bindings/generate.py from calls.txt: do not edit.",
           "const SystemForms kSystemForms[] = {"]
    rows = [forms[i:i + 6] for i in range(0, len(forms), 6)]
    for row in rows:
        f0 = row[0]
        out.append("  {%s, Shape::%s, {" % (COLL[f0.coll], f0.shape.capitalize()
                                             if f0.shape != "v" else "V"))
        for large in (False, True):
            out.append("    {")
            if large:
                out.append("#if MPIA_HAVE_LARGE_COUNT")
            for kind in KINDS:
                f = next(x for x in row if x.kind == kind and x.large == large)
                if kind != "persistent":
                    out.append(system_slot(f))
                    continue
                out.append("#if MPIA_HAVE_PERSISTENT_COLL")
                out.append(system_slot(f))
                if not large and not f.neighbor:
                    out.append("#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ")
                    out.append(system_slot(f, "PMPIX_"))
                out += ["#else", "      nullptr,", "#endif"]
            if large:
                out += ["#else", "      nullptr, nullptr, nullptr,", "#endif"]
            out.append("    },")
        out.append("  }},")
    out.append("};")
    return "\n".join(out) + "\n"


# --- the drop-in library ------------------------------------------------------------------------

def guard(f):
    """The preprocessor condition under which the MPI declares the form's MPI_ name."""
    if f.large:
        return "MPIA_HAVE_LARGE_COUNT"
    if f.kind == "persistent":
        return "MPIA_HAVE_PERSISTENT_COLL"
    return None


def preload_header(forms):
    out = ["/* Generated by src/bindings/generate.py from calls.txt: do not edit. */"]
    for f in forms:
        out.append(c_decl("MPIA_PRELOAD_HIDDEN int", "mpia_preload_" + f.lower,
                          f.params("MPI_Request"), ";"))
    return "\n".join(out) + "\n"


def system_call(f):
    """The MPI library's own call of a form, as the body of a lambda."""
    a = f.args()
    if f.kind == "persistent" and not f.large:
        return "\n".join([
            "#if MPIA_HAVE_PERSISTENT_COLL",
            call("        return PMPI_" + f.name, a, ";"),
            "#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ",
            call("        return PMPIX_" + f.name, a, ";"),
            "#else",
            "        return MPI_ERR_INTERN;",
            "#endif"])
    return call("        return PMPI_" + f.name, a, ";")


def preload(forms):
    out = ["// Generated by src/bindings/generate.py from calls.txt: do not edit.", "",
           "namespace {", "// The forms, in the order of enum Form.",
           "const FormInfo kForms[kFormCount] = {"]
    for f in forms:
        mpi = "MPI_" + f.name
        if f.kind == "persistent" and not f.large:
            mpi = '" MPIA_PRELOAD_INIT_PREFIX "' + f.name
        out.append('    {"%s", Coll::%s, %s},' % (mpi, f.coll, str(f.kind == "persistent").lower()))
    out += ["};", "}  // namespace", "", 'extern "C" {']
    for f in forms:
        g = guard(f)
        blocks = "blocks(kForms[%s], comm)" % form_enum(f)
        if f.shape == "regular":
            bytes_ = "regular_bytes(recvcount, recvtype, %s)" % blocks
        elif f.shape == "v":
            bytes_ = "v_bytes(recvcounts, recvtype, %s)" % blocks
        else:
            bytes_ = "w_bytes(recvcounts, recvtypes, %s)" % blocks
        ours_args = f.args()[:-1] + ["op"] if f.kind != "blocking" else f.args()
        out.append("")
        if g and f.large:
            out.append("#if " + g)
        out.append(c_decl("int", "mpia_preload_" + f.lower, f.params("MPI_Request"), " {"))
        if f.kind == "blocking":
            out.append("  return dispatch(\n      %s, comm," % form_enum(f))
            out.append("      [&] {\n" + call("        return MPIX_" + f.name, ours_args) +
                       "\n      },")
        else:
            out.append("  return dispatch_request(\n      %s, comm, request," % form_enum(f))
            out.append("      [&](MPIX_Request* op) {\n" +
                       call("        return MPIX_" + f.name, ours_args) + "\n      },")
        out.append("      [&] {\n" + system_call(f) + "\n      },")
        out.append("      [&] { return %s; });" % bytes_)
        out.append("}")
        if g and not f.large:
            out.append("#if " + g)
        out.append(c_decl("MPIA_PRELOAD_EXPORT int", "MPI_" + f.name, f.params("MPI_Request"),
                          " {"))
        out.append(call("  return mpia_preload_" + f.lower, f.args()))
        out.append("}")
        if g:
            out.append("#endif")
    out.append('}  // extern "C"')
    return "\n".join(out) + "\n"


def form_enum(f):
    return "kForm_" + f.name


def preload_enum(forms):
    return ("enum Form {\n" + "".join("  %s,\n" % form_enum(f) for f in forms) +
            "  kFormCount\n};\n")


def ompi_ext(forms):
    out = ["// Generated by src/bindings/generate.py from calls.txt: do not edit."]
    for f in forms:
        if f.kind == "persistent" and not f.large:
            out.append(c_decl("MPIA_PRELOAD_EXPORT int", "MPIX_" + f.name,
                              f.params("MPI_Request"), " {"))
            out.append(call("  return mpia_preload_" + f.lower, f.args()))
            out.append("}")
    return "\n".join(out) + "\n"


# --- Fortran: the drop-in's entry points, the module and its C side ------------------------------

def f_params(f):
    """The Fortran routine's arguments as C sees them (by reference), ierr last."""
    p = []
    for t, n in f.params("R"):
        n = n.rstrip("[]")
        if t.endswith("void*"):
            p.append(("void*", n))
        elif "MPI_Aint" in t:
            p.append(("MPI_Aint*", n))
        else:
            p.append(("MPI_Fint*", n))
    return p + [("MPI_Fint*", "ierr")]


def fortran(forms):
    out = ["/* Generated by src/bindings/generate.py from calls.txt: do not edit. */"]
    entries = []
    for f in forms:
        if f.large:
            continue
        if f.kind == "persistent":
            out.append("#if MPIA_FORTRAN_PERSISTENT")
        p = f_params(f)
        out.append(c_decl("static void", "f_" + f.lower, p, " {"))
        out.append("  FCall a;")
        if f.shape == "regular":
            out.append("  f_regular(&a, sendbuf, sendtype, recvbuf, recvtype, comm);")
            c = ["a.sendbuf", "(int)*sendcount", "a.sendtype", "a.recvbuf", "(int)*recvcount",
                 "a.recvtype", "a.comm"]
        else:
            w = f.shape == "w"
            aint = "MPI_Aint" in (f.int_displ,)
            out.append(call("  f_blocks", ["&a", str(int(f.neighbor)), str(int(w)), "sendbuf",
                                           "sendcounts", "NULL" if aint else "sdispls",
                                           "sendtype" + ("s" if w else ""), "recvbuf",
                                           "recvcounts", "NULL" if aint else "rdispls",
                                           "recvtype" + ("s" if w else ""), "comm"]))
            sd = "sdispls" if aint else "a.sdispls"
            rd = "rdispls" if aint else "a.rdispls"
            st = "a.sendtypes" if w else "a.sendtype"
            rt = "a.recvtypes" if w else "a.recvtype"
            c = ["a.sendbuf", "a.sendcounts", sd, st, "a.recvbuf", "a.recvcounts", rd, rt,
                 "a.comm"]
        if f.kind == "persistent":
            c.append("MPI_Info_f2c(*info)")
        if f.kind == "blocking":
            out.append(call("  if (a.code == MPI_SUCCESS) a.code = mpia_preload_" + f.lower, c))
            out.append("  f_end(&a, ierr);")
        else:
            out.append("  MPI_Request r = MPI_REQUEST_NULL;")
            out.append(call("  if (a.code == MPI_SUCCESS) a.code = mpia_preload_" + f.lower,
                            c + ["&r"]))
            out.append("  f_end_request(&a, r, request, ierr);")
        out.append("}")
        params = "(" + ", ".join("%s %s" % (t, n) for t, n in p) + ")"
        args = "(" + ", ".join(n for _, n in p) + ")"
        up = f.lower.upper()
        if f.kind == "persistent":
            ext = f.lower.replace("_init", "")
            out.append("#if MPIA_FORTRAN_PERSISTENT_MPIX")
            out.append("MPIA_FORTRAN_MANGLINGS(mpix_%s, MPIX_%s, f_%s, %s, %s)" %
                       (f.lower, up, f.lower, params, args))
            out.append("MPIA_F08_ENTRY(mpix_%s_f08_, f_%s, %s, %s)" % (f.lower, f.lower, params,
                                                                       args))
            out.append("#else")
            out.append("MPIA_FORTRAN_MANGLINGS(mpi_%s, MPI_%s, f_%s, %s, %s)" %
                       (f.lower, up, f.lower, params, args))
            out.append("MPIA_F08_ENTRY(mpi_%s_f08_, f_%s, %s, %s)" % (f.lower, f.lower, params,
                                                                      args))
            out.append("#endif")
            out.append("#endif")
            del ext
        else:
            out.append("MPIA_FORTRAN_MANGLINGS(mpi_%s, MPI_%s, f_%s, %s, %s)" %
                       (f.lower, up, f.lower, params, args))
            out.append("MPIA_F08_ENTRY(mpi_%s_f08_, f_%s, %s, %s)" % (f.lower, f.lower, params,
                                                                      args))
    return "\n".join(out + entries) + "\n"


def glue(forms):
    out = ["/* Generated by src/bindings/generate.py from calls.txt: do not edit. */"]
    for f in forms:
        if f.large:
            continue
        p = []
        for t, n in f.params("MPIX_Request"):
            n = n.rstrip("[]")
            if t.endswith("void*"):
                p.append(("CFI_cdesc_t*", n))
            elif t.startswith("const") and n.endswith("types"):
                p.append(("const MPI_Fint*", n))
            elif t.startswith("const"):
                p.append(("const %s*" % t.split()[1], n))
            elif t in ("MPI_Datatype", "MPI_Comm", "MPI_Info"):
                p.append(("MPI_Fint", n))
            else:
                p.append((t, n))
        out.append(c_decl("int", "mpia_f_" + f.lower, p, " {"))
        out.append("  const MPI_Comm c = MPI_Comm_f2c(comm);")
        out.append("  BUFFERS(sendbuf, recvbuf, c)")
        a = []
        for t, n in p:
            if t == "CFI_cdesc_t*":
                a.append("s_" if n == "sendbuf" else "r_")
            elif n in ("sendtype", "recvtype"):
                a.append("MPI_Type_f2c(%s)" % n)
            elif n in ("sendtypes", "recvtypes"):
                a.append("st" if n == "sendtypes" else "rt")
            elif n == "comm":
                a.append("c")
            elif n == "info":
                a.append("MPI_Info_f2c(info)")
            else:
                a.append(n)
        body = call("MPIX_" + f.name, a, "")
        if f.shape == "w":
            out.append("  WITH_TYPES(c, %d, sendtypes, recvtypes,\n             %s)" %
                       (int(f.neighbor), body.replace("\n", "\n             ")))
        else:
            out.append("  return " + body.replace("\n", "\n       ") + ";")
        out.append("}")
    return "\n".join(out) + "\n"


def fwrap(text, indent):
    """Fortran free form: lines of at most 100 characters, continued with &."""
    words, lines, cur = text.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > 96:
            lines.append(cur + " &")
            cur = " " * (indent + 4) + w
        else:
            cur = (cur + " " + w) if cur else (" " * indent + w)
    lines.append(cur)
    return "\n".join(lines)


def f_dummies(f):
    """(name, declaration) of the module procedure's dummies, in order, ierror last."""
    d = []
    asyn = ", asynchronous" if f.kind != "blocking" else ""
    arrays_asyn = ", asynchronous" if f.kind == "nonblocking" else ""
    for t, n in f.params("MPIX_Request"):
        n = n.rstrip("[]")
        if n == "sendbuf":
            d.append((n, "type(*), dimension(..), intent(in)%s" % asyn))
        elif n == "recvbuf":
            d.append((n, "type(*), dimension(..)%s" % asyn))
        elif n in ("sendcount", "recvcount"):
            d.append((n, "integer, intent(in)"))
        elif n in ("sendcounts", "recvcounts") or (n.endswith("displs") and t.split()[-1] == "int"):
            d.append((n + "(*)", "integer, intent(in)%s" % arrays_asyn))
        elif n.endswith("displs"):
            d.append((n + "(*)", "integer(MPI_ADDRESS_KIND), intent(in)%s" % arrays_asyn))
        elif n in ("sendtypes", "recvtypes"):
            d.append((n + "(*)", "type(MPI_Datatype), intent(in)%s" % arrays_asyn))
        elif n in ("sendtype", "recvtype"):
            d.append((n, "type(MPI_Datatype), intent(in)"))
        elif n == "comm":
            d.append((n, "type(MPI_Comm), intent(in)"))
        elif n == "info":
            d.append((n, "type(MPI_Info), intent(in)"))
        elif n == "request":
            d.append((n, "type(MPIX_Request), intent(out)"))
    return d


def module(forms):
    pub, ifaces, procs = [], [], []
    hdr = "! Generated by src/bindings/generate.py from calls.txt: do not edit."
    for f in forms:
        if f.large:
            continue
        pub.append("  public :: MPIX_" + f.name)
        d = f_dummies(f)
        names = [n.split("(")[0] for n, _ in d]
        # The C side's interface.
        ifaces.append(fwrap("integer(c_int) function c_%s(%s) bind(C, name=\"mpia_f_%s\")" %
                            (f.lower, ", ".join(names), f.lower), 4))
        imports = ["c_int"]
        if f.kind != "blocking":
            imports.append("MPIX_Request")
        if f.shape == "w":
            imports.append("MPI_Datatype")
            if f.int_displ == "MPI_Aint":
                imports.append("MPI_ADDRESS_KIND")
        ifaces.append("      import :: " + ", ".join(imports))
        ifaces.append("      type(*), dimension(..) :: sendbuf, recvbuf")
        vals = []
        for n, decl in d:
            b = n.split("(")[0]
            if b in ("sendbuf", "recvbuf"):
                continue
            if decl.startswith("integer(MPI_ADDRESS_KIND)"):
                ifaces.append("      integer(MPI_ADDRESS_KIND) :: " + n)
            elif n.endswith("(*)") and decl.startswith("type(MPI_Datatype)"):
                ifaces.append("      type(MPI_Datatype) :: " + n)
            elif n.endswith("(*)"):
                ifaces.append("      integer(c_int) :: " + n)
            elif b == "request":
                ifaces.append("      type(MPIX_Request) :: request")
            else:
                vals.append(b)
        ifaces.append("      integer(c_int), value :: " + ", ".join(vals))
        ifaces.append("    end function")
        # The procedure.
        procs.append("")
        procs.append(fwrap("subroutine MPIX_%s(%s, ierror)" % (f.name, ", ".join(names)), 2))
        for n, decl in d:
            procs.append("    %s :: %s" % (decl, n))
        procs.append("    integer, optional, intent(out) :: ierror")
        procs.append("    call register()")
        cargs = []
        for b in names:
            if b in ("sendtype", "recvtype", "comm", "info"):
                cargs.append(b + "%MPI_VAL")
            else:
                cargs.append(b)
        procs.append(fwrap("call set(ierror, c_%s(%s))" % (f.lower, ", ".join(cargs)), 4))
        procs.append("  end subroutine")
    extras(ifaces, procs)
    return ("\n".join([hdr] + pub) + "\n", "\n".join([hdr] + ifaces) + "\n",
            "\n".join([hdr] + procs) + "\n")


# The module's procedures beyond the forms that are one call each, bound straight to the C API:
# per handle type, ==, /= and MPIX_<type>_free; the request queries with MPI_Count outputs; the
# request queries with a text output (through the module's request_text).
HANDLES = ("Request", "Topo")
COUNT_QUERIES = (("Request_get_traffic", ("messages", "bytes", "internode_messages",
                                          "internode_bytes")),
                 ("Request_get_memory", ("bytes", "mpi_requests", "datatypes")))
TEXT_QUERIES = (("Request_get_algorithm", "name", False), ("Request_get_trial", "text", True))


def extras(ifaces, procs):
    def interface(name, dummies, imports, decls):
        ifaces.append(fwrap('integer(c_int) function c_%s(%s) bind(C, name="MPIA_%s")' %
                            (name.lower(), ", ".join(dummies), name), 4))
        ifaces.append("      import :: " + ", ".join(imports))
        ifaces.extend("      " + d for d in decls)
        ifaces.append("    end function")

    def subroutine(name, dummies, decls, body):
        procs.append("")
        procs.append(fwrap("subroutine MPIX_%s(%s)" % (name, ", ".join(dummies + ["ierror"])), 2))
        procs.extend("    " + d for d in decls + ["integer, optional, intent(out) :: ierror"])
        procs.append(fwrap(body, 4))
        procs.append("  end subroutine")

    for h in HANDLES:
        t, v = "MPIX_" + h, h.lower()
        for op, neg in (("eq", ""), ("ne", ".not. ")):
            procs += ["", "  logical function %s_%s(a, b)" % (v, op),
                      "    type(%s), intent(in) :: a, b" % t,
                      "    %s_%s = %ssame_handle(a%%handle, b%%handle)" % (v, op, neg),
                      "  end function"]
        interface(h + "_free", [v], ["c_int", t], ["type(%s) :: %s" % (t, v)])
        subroutine(h + "_free", [v], ["type(%s), intent(inout) :: %s" % (t, v)],
                   "call set(ierror, c_%s_free(%s))" % (v, v))
    for name, outs in COUNT_QUERIES:
        interface(name, ["request"] + list(outs), ["c_int", "MPIX_Request", "MPI_COUNT_KIND"],
                  ["type(MPIX_Request), value :: request",
                   "integer(MPI_COUNT_KIND) :: " + ", ".join(outs)])
        subroutine(name, ["request"] + list(outs),
                   ["type(MPIX_Request), intent(in) :: request",
                    "integer(MPI_COUNT_KIND), intent(out) :: " + ", ".join(outs)],
                   "call set(ierror, c_%s(%s))" % (name.lower(), ", ".join(["request"] +
                                                                             list(outs))))
    for name, out, trial in TEXT_QUERIES:
        subroutine(name, ["request", out, "resultlen"],
                   ["type(MPIX_Request), intent(in) :: request",
                    "character(len=*), intent(out) :: " + out, "integer, intent(out) :: resultlen"],
                   "call request_text(request, %s, %s, resultlen, ierror)" %
                   (".true." if trial else ".false.", out))


# --- the communicator-making calls (creators.txt) ----------------------------------------------

def read_creators(path):
    rows = []
    for line in table_lines(path):
        name, params = line.split(None, 1)
        ps = []
        for p in params.split(","):
            t, n = p.strip().rsplit(" ", 1)
            ps.append((t.replace("*", "").strip() + ("*" if "*" in t else ""), n))
        rows.append((name, ps))
    return rows


def creators(rows):
    c = ["// Generated by src/bindings/generate.py from creators.txt: do not edit."]
    f = ["/* Generated by src/bindings/generate.py from creators.txt: do not edit. */"]
    for name, ps in rows:
        args = [n.rstrip("[]") for _, n in ps]
        c.append(c_decl("MPIA_PRELOAD_EXPORT int", "MPI_" + name, ps, " {"))
        c.append(call("  return mpia_preload_created(PMPI_" + name, args, ", newcomm);"))
        c.append("}")
        fargs = args + ["ierr"]
        params = "(" + ", ".join("MPI_Fint* " + a for a in fargs) + ")"
        f.append("MPIA_CREATES(mpi_%s, MPI_%s, %s, (%s), newcomm)" %
                 (name.lower(), name.upper(), params, ", ".join(fargs)))
    return "\n".join(c) + "\n", "\n".join(f) + "\n"


# --- the drop-in's Fortran request calls (fortran.c: f_<name>) --------------------------------

# Each MPI request call the drop-in takes over from Fortran, with its arguments (all MPI_Fint*;
# ierr follows): its mpif.h / `use mpi` manglings, and its `use mpi_f08` entry where the MPI's f08
# routine does not reach the C interposer (MPIA_FORTRAN_F08_REQUESTS).
FORTRAN_REQUEST_CALLS = (
    ("wait", "request status"), ("test", "request flag status"),
    ("request_get_status", "request flag status"), ("waitall", "count requests statuses"),
    ("testall", "count requests flag statuses"), ("waitany", "count requests index status"),
    ("testany", "count requests index flag status"),
    ("waitsome", "incount requests outcount indices statuses"),
    ("testsome", "incount requests outcount indices statuses"), ("start", "request"),
    ("startall", "count requests"), ("request_free", "request"), ("cancel", "request"))


def fortran_requests():
    out = ["/* Generated by src/bindings/generate.py: do not edit. */"]
    f08 = ["#if MPIA_FORTRAN_F08_REQUESTS"]
    for name, args in FORTRAN_REQUEST_CALLS:
        a = args.split() + ["ierr"]
        params = "(" + ", ".join("MPI_Fint* " + x for x in a) + ")"
        both = "f_%s, %s, (%s)" % (name, params, ", ".join(a))
        out.append("MPIA_FORTRAN_MANGLINGS(mpi_%s, MPI_%s, %s)" % (name, name.upper(), both))
        f08.append("MPIA_FORTRAN_ENTRY(mpi_%s_f08_, %s)" % (name, both))
    return "\n".join(out + f08 + ["#endif"]) + "\n"


def write(path, text):
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    table, template, out_header, out_dir = sys.argv[1:]
    forms = read_table(table)
    c_creators, f_creators = creators(read_creators(os.path.join(os.path.dirname(table),
                                                                 "creators.txt")))
    with open(template) as f:
        write(out_header, header(forms, f.read()))
    pub, ifaces, procs = module(forms)
    outputs = {
        "api_forms.inc": api(forms),
        "preload_forms.h": preload_header(forms),
        "preload_enum.inc": preload_enum(forms),
        "preload_forms.inc": preload(forms),
        "preload_ompi_ext.inc": ompi_ext(forms),
        "system_forms.inc": system_forms(forms),
        "fortran_forms.inc": fortran(forms),
        "glue_forms.inc": glue(forms),
        "module_public.inc": pub,
        "module_interfaces.inc": ifaces,
        "module_procedures.inc": procs,
        "preload_creators.inc": c_creators,
        "fortran_creators.inc": f_creators,
        "fortran_requests.inc": fortran_requests(),
    }
    for name, text in outputs.items():
        write(os.path.join(out_dir, name), text)


if __name__ == "__main__":
    main()
