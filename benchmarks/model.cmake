# mpia_model: the cost model's predictions and auto's choice for any machine, without MPI
# ranks (scripts/calibrate.py fits the model with it). Included from benchmarks/CMakeLists.txt.
add_executable(mpia_model mpia_model.cpp)
target_link_libraries(mpia_model PRIVATE mpia_internal mpia_build_flags)
# C++17, asked for here: mpia_internal carries no standard, and SimGrid's smpicxx passes
# -std=gnu++11 (the SMPI preset).
target_compile_features(mpia_model PRIVATE cxx_std_17)
