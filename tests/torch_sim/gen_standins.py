#!/usr/bin/env python3
"""Generates the stand-in NVIDIA libraries real torch loads on the simulated
device (test infrastructure: never installed for users).

From the undefined dynamic symbols of torch's own libraries (readelf
--dyn-syms and -V: each symbol's type and the version node its reference
carries), one library per NVIDIA soname torch needs and no wheel here
provides: weak definitions that succeed (return 0) and compute nothing,
under the version nodes the references name, so ld.so's version checks
pass. Strong definitions in overrides/<soname>.c replace the weak ones where
a caller reads what the call returns (a handle, a heuristic result, an error
string). The runtime and the driver themselves are the simulator
(libcca_sim.so): libcudart.so.13 and libcuda.so.1 here only add what the
simulator does not serve (fat-binary registration, launch configuration; the
driver calls torch links and never makes on this path, which answer
NOT_SUPPORTED) and depend on libcca_sim.so, so that a lookup in them finds
the simulator's functions. libnvidia-ml.so.1, which torch opens with dlopen,
is overrides/libnvidia-ml.so.1.c alone.

Usage: gen_standins.py TORCH_LIB_DIR LIBCCA_SIM OUT_DIR
Writes OUT_DIR/<soname> for each, and OUT_DIR/standins.json: per library, the
symbols stood in and those the simulator serves."""
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OVERRIDES = os.path.join(HERE, "overrides")
# Version nodes that are not the soname of the library defining them.
NODE_FILE = {"NVSHMEM": "libnvshmem_host.so.3"}
# Unversioned references: the library by name prefix (first match).
PREFIX_FILE = [(re.compile(r"^cuFile"), "libcufile.so.0"), (re.compile(r"^cusparseLt"), "libcusparseLt.so.0"),
               (re.compile(r"^nccl"), "libnccl.so.2"), (re.compile(r"^cu[A-Z]"), "libcuda.so.1")]
SIM_BACKED = {"libcudart.so.13": 801, "libcuda.so.1": 801}   # unserved calls: cudaErrorNotSupported / CUDA_ERROR_NOT_SUPPORTED
STRING_RESULT = re.compile(r"(GetErrorString|GetStatusString|GetErrorName|GetStatusName|GetLastError)$")
HANDLE_CREATE = re.compile(r"^(cublas|cublasLt|cusparse|cudnn|cusolverDn|cusolverSp)\w*Create\w*$")
DLOPENED = ["libnvidia-ml.so.1"]


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed_and_versions(lib):
    """(NEEDED sonames, {version node: file}) of one torch library."""
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run("readelf", "-dW", lib))
    nodes, cur = {}, None
    for line in run("readelf", "-VW", lib).splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            cur = m.group(1)
        m = re.search(r"Name: (\S+)", line)
        if m and cur and "Version needs" not in line:
            nodes[m.group(1)] = cur
    return needed, nodes


def undefined(lib):
    """[(name, version or None, type)] of lib's undefined dynamic symbols."""
    out = []
    for line in run("readelf", "--dyn-syms", "-W", lib).splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] == "UND" and f[3] in ("FUNC", "OBJECT", "NOTYPE"):
            name = f[7]
            ver = None
            if "@" in name:
                name, ver = name.split("@", 1)
                ver = ver.lstrip("@")
            out.append((name, ver, f[3]))
    return out


def main(torch_lib, sim_lib, out):
    os.makedirs(out, exist_ok=True)
    libs = sorted(os.path.join(torch_lib, f) for f in os.listdir(torch_lib) if ".so" in f and
                  os.path.isfile(os.path.join(torch_lib, f)))
    present = set(os.listdir(torch_lib))
    wanted, symbols, node_of = set(), {}, {}
    for lib in libs:
        needed, nodes = needed_and_versions(lib)
        for n in needed:
            if n not in present and n.startswith(("libcu", "libnv", "libnccl")):
                wanted.add(n)
        for node, f in nodes.items():
            if f in wanted or f.startswith(("libcu", "libnv", "libnccl")):
                node_of[node] = f
    sim_defined = set(l.split()[-1] for l in run("nm", "-D", "--defined-only", sim_lib).splitlines() if l.strip())
    for lib in libs:
        for name, ver, typ in undefined(lib):
            if ver:
                f = NODE_FILE.get(ver) or node_of.get(ver)
                if f is None or f not in wanted:
                    continue
            else:
                f = next((lib_ for p, lib_ in PREFIX_FILE if p.match(name)), None)
                if f is None or f not in wanted:
                    continue
            symbols.setdefault(f, {})[name] = (ver, typ)
    report = {}
    for soname in sorted(wanted) + DLOPENED:
        syms = symbols.get(soname, {})
        backed = soname in SIM_BACKED
        served = sorted(n for n in syms if backed and n in sim_defined)
        stood = {n: v for n, v in syms.items() if n not in served}
        src = os.path.join(out, soname + ".gen.c")
        with open(src, "w") as fh:
            fh.write("/* generated by tests/torch_sim/gen_standins.py: do not edit */\n")
            fh.write("#define W __attribute__((weak, visibility(\"default\")))\n")
            fh.write("static char token[64];\n")
            ret = SIM_BACKED.get(soname, 0)
            for n, (ver, typ) in sorted(stood.items()):
                if typ == "OBJECT":
                    fh.write(f"W char {n}[256] __attribute__((aligned(64)));\n")
                elif STRING_RESULT.search(n) and not soname.startswith(("libcupti", "libcuda.", "libcudart")):
                    fh.write(f"W const char *{n}(void) {{ return \"{n}: a stand-in (no NVIDIA library here)\"; }}\n")
                elif HANDLE_CREATE.match(n):
                    fh.write(f"W int {n}(void **out) {{ if (out) *out = token; return 0; }}\n")
                else:
                    fh.write(f"W int {n}(void) {{ return {ret}; }}\n")
        cmd = ["cc", "-shared", "-fPIC", "-O1", "-w", "-o", os.path.join(out, soname), src]
        ov = os.path.join(OVERRIDES, soname + ".c")
        if os.path.exists(ov):
            cmd.append(ov)
            cmd += ["-I", os.path.join(os.environ.get("CUDA_PATH", "/usr/local/cuda"), "include")]
        nodes = sorted({v for v, _ in stood.values() if v})
        if nodes:                                     # one block per version node, each with its symbols
            mapfile = os.path.join(out, soname + ".map")
            extra = sorted(defined_in(ov) - set(stood)) if os.path.exists(ov) else []
            with open(mapfile, "w") as fh:
                for k, node in enumerate(nodes):
                    names = sorted(n for n, (v, _) in stood.items() if v == node or (v is None and k == 0))
                    names += extra if k == 0 else []
                    fh.write("%s {\n  global:\n%s%s};\n" % (node, "".join(f"    {n};\n" for n in names),
                                                            "  local: *;\n" if k == 0 else ""))
            cmd += [f"-Wl,--version-script={mapfile}"]
        cmd += [f"-Wl,-soname,{soname}"]
        if backed:
            cmd += ["-Wl,--no-as-needed", os.path.abspath(sim_lib), "-Wl,-rpath," + os.path.dirname(os.path.abspath(sim_lib))]
        subprocess.run(cmd, check=True)
        report[soname] = {"stood_in": sorted(stood), "served_by_simulator": served,
                          "overrides": sorted(defined_in(ov)) if os.path.exists(ov) else []}
    with open(os.path.join(out, "standins.json"), "w") as fh:
        json.dump(report, fh, indent=1, sort_keys=True)
    return 0


def defined_in(c_file):
    """Function names an override file defines (its exported definitions)."""
    text = open(c_file).read()
    return set(re.findall(r"^EXPORT\s+[\w\s\*]+?\b(\w+)\s*\(", text, re.M))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
