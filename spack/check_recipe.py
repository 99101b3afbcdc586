#!/usr/bin/env python3
"""Static check of the Spack recipe against the project, without Spack (ctest spack.recipe.options).

  python3 spack/check_recipe.py [<project root>]

Fails (exit 1) when: a CMake variable the recipe sets with define()/define_from_variant() is not
an option()/cache variable of the project; a variant is not mapped onto a CMake variable; the
numbered version of the recipe is not project(VERSION) of CMakeLists.txt; repo.yaml's namespace is
not its directory name (Package API v2)."""
import ast
import os
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parents[1])
repo = root / "spack" / "spack_repo" / "mpi_advance"
recipe = repo / "packages" / "mpi_advance" / "package.py"

calls = {}  # directive/method name -> list of string first arguments
for node in ast.walk(ast.parse(recipe.read_text(), str(recipe))):
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        calls.setdefault(name, []).append(node.args[0].value)
        if name == "define_from_variant" and len(node.args) > 1:
            calls.setdefault("mapped_variant", []).append(node.args[1].value)

cmake_files = []
for top, dirs, files in os.walk(root):  # the project's CMake code, not build trees
    dirs[:] = [d for d in dirs if not d.startswith(("build", "_install", "."))]
    cmake_files += [pathlib.Path(top, f) for f in files
                    if f == "CMakeLists.txt" or f.endswith(".cmake")]
cmake_text = "\n".join(p.read_text() for p in cmake_files)
declared = set(re.findall(r"option\(\s*(MPIA_\w+)", cmake_text))
declared |= set(re.findall(r"set\(\s*(MPIA_\w+)[^)]*\bCACHE\b", cmake_text))

errors = []
for var in calls.get("define_from_variant", []) + calls.get("define", []):
    if var.startswith("MPIA_") and var not in declared:
        errors.append(f"recipe sets {var}, which no option()/CACHE of the project declares")
for var in set(calls.get("variant", [])) - set(calls.get("mapped_variant", [])):
    errors.append(f"variant '{var}' is not passed to CMake with define_from_variant()")

project_version = re.search(r"project\(\s*\w+\s+VERSION\s+([\d.]+)",
                            (root / "CMakeLists.txt").read_text())
numbered = [v for v in calls.get("version", []) if re.fullmatch(r"[\d.]+", v)]
if not project_version or project_version.group(1) not in numbered:
    errors.append(f"project(VERSION {project_version and project_version.group(1)}) "
                  f"is not among the recipe's versions {numbered}")

namespace = re.search(r"^\s*namespace:\s*['\"]?([\w.]+)", (repo / "repo.yaml").read_text(), re.M)
if not namespace or namespace.group(1) != repo.name:
    errors.append(f"repo.yaml namespace must be '{repo.name}' (its directory under spack_repo/)")

for e in errors:
    print(f"check_recipe: {e}", file=sys.stderr)
print(f"check_recipe: {'FAILED' if errors else 'OK'} ({recipe.relative_to(root)})")
sys.exit(1 if errors else 0)
