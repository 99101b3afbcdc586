# The measured trial of persistent auto requests (included by test/mpi/CMakeLists.txt):
#   mpi.trial          every start right, agreement, many requests in any completion order, off
#                      where it must be: the real measured times
#   mpi.env.trial_*    injected times (MPIX_TRIAL_TIMES, read once per process; MPIX_TRIAL_NOISE
#                      adds seeded noise to them) and what the trial
#                      must settle on (MPIA_TEST_TRIAL_WINNER, see test_trial.cpp; a second round:
#                      trial_refined); MPIX_AUTO=model
add_executable(mpia_test_trial test_trial.cpp)
target_link_libraries(mpia_test_trial PRIVATE mpia_mpi_test_support)
mpia_add_mpi_test(NAME mpi.trial TARGET mpia_test_trial)

# The cheapest entry wins.
_mpia_env_test(trial_cheapest trial FILTER "TrialAgreement.*" NPROCS 2 3 4 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=10" MPIA_TEST_TRIAL_WINNER=bruck)
# Ranks measure differently: rank 1 finds bruck slow, so nobody takes it; the others tie with the
# MPI library's call, which stays. (A second: a start is timed from the last rank's arrival, and
# a slow rank that came early enough is done before it -- trial_sync_arrival_late -- so rank 1's
# time must outlast any skew the ranks' starts have here.)
_mpia_env_test(trial_ranks_differ trial FILTER "TrialAgreement.*" NPROCS 3 4 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=10,bruck@1=1000000" MPIA_TEST_TRIAL_WINNER=system)
# The first round's winner (tra) is refined: a radix the model ranked lower wins the second round
# (on these ranks the first round holds tra:radix=2, whose refinement is radix 4: doubled).
_mpia_env_test(trial_refined trial FILTER "TrialAgreement.Settles*" NPROCS 4 5 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,tra=50,tra:radix=4=10" MPIA_TEST_TRIAL_WINNER=tra:radix=4
  MPIA_TEST_TRIAL_REFINED=1)
# Less than 2 % faster than the MPI library's call: it stays; 4 % faster, without noise, wins.
_mpia_env_test(trial_margin trial FILTER "TrialAgreement.*" NPROCS 3 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=99" MPIA_TEST_TRIAL_WINNER=system)
_mpia_env_test(trial_gain trial FILTER "TrialAgreement.Settles*" NPROCS 3 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=96" MPIA_TEST_TRIAL_WINNER=bruck)
# Noise (MPIX_TRIAL_NOISE: every rank's own, seeded): bruck 10 % faster than everything else is
# still found, and the MPI library's call 10 % faster is kept (the noise the unit tests call
# quiet: test/unit/test_trial_rule.cpp; seeded, so the outcome is the same every run).
_mpia_env_test(trial_noise_ours trial FILTER "TrialAgreement.Settles*" NPROCS 3 4 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=90" MPIX_TRIAL_NOISE=0.03:11 MPIA_TEST_TRIAL_WINNER=bruck)
_mpia_env_test(trial_noise_system trial FILTER "TrialAgreement.Settles*" NPROCS 3 4 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,system=90" MPIX_TRIAL_NOISE=0.1:12 MPIA_TEST_TRIAL_WINNER=system)
# Trial starts with a barrier each (MPIX_TRIAL_SYNC=barrier; the default times them from the
# last rank's arrival): the same agreement, the same winner, every start right.
_mpia_env_test(trial_sync_barrier trial FILTER "TrialAgreement.*" NPROCS 3 4 ENVIRONMENT
  MPIX_TRIAL_SYNC=barrier "MPIX_TRIAL_TIMES=*=100,bruck=10" MPIA_TEST_TRIAL_WINNER=bruck)
# A start is timed from the last rank's start call to the last rank's completion: rank 0 enters
# every start 50 ms after the others, and rank 1, which finds bruck slow, is done long before
# rank 0 comes, so bruck wins (with MPIX_TRIAL_SYNC=barrier, or timed from each rank's own start
# call, rank 1's 1 ms decides: trial_ranks_differ). "none" is the default's former name.
_mpia_env_test(trial_sync_arrival_late trial FILTER "TrialAgreement.Settles*" NPROCS 3 4
  ENVIRONMENT "MPIX_TRIAL_TIMES=*=100,bruck=10,bruck@1=1000" MPIA_TEST_TRIAL_LATE_MS=50
  MPIA_TEST_TRIAL_WINNER=bruck)
_mpia_env_test(trial_sync_none_late trial FILTER "TrialAgreement.Settles*" NPROCS 3 ENVIRONMENT
  MPIX_TRIAL_SYNC=none "MPIX_TRIAL_TIMES=*=100,bruck=10,bruck@1=1000" MPIA_TEST_TRIAL_LATE_MS=50
  MPIA_TEST_TRIAL_WINNER=bruck)
_mpia_env_test(trial_barrier_late trial FILTER "TrialAgreement.Settles*" NPROCS 3 ENVIRONMENT
  MPIX_TRIAL_SYNC=barrier "MPIX_TRIAL_TIMES=*=100,bruck=10,bruck@1=1000"
  MPIA_TEST_TRIAL_LATE_MS=50 MPIA_TEST_TRIAL_WINNER=system)
# Clocks that disagree (MPIX_TRIAL_SKEW: ranks 1 and 3 read theirs seconds off): the first timed
# start estimates each rank's offset from rank 0's (rank 3's through rank 1), so rank 0's slow
# bruck still counts, and the MPI library's call stays. Timed on the ranks' raw clocks, rank
# 1's, ahead by more than rank 0's slow start, would be the latest call and the latest
# completion, and bruck (fast on rank 1) would win. (On two ranks a tie keeps the model's pick.)
_mpia_env_test(trial_sync_skew trial FILTER "TrialAgreement.*" NPROCS 2 3 4 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=10,bruck@0=1000000" "MPIX_TRIAL_SKEW=1=3000000,3=-5000000"
  MPIA_TEST_TRIAL_WINNER=tie)
# Two ranks: all tied, the model's pick (its direct exchange) stays; the MPI library's call
# faster beyond the noise, it wins.
_mpia_env_test(trial_two_ranks_tie trial FILTER "TrialAgreement.Settles*" NPROCS 2 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100" MPIA_TEST_TRIAL_WINNER=pick)
_mpia_env_test(trial_two_ranks_system trial FILTER "TrialAgreement.Settles*" NPROCS 2 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,system=60" MPIA_TEST_TRIAL_WINNER=system)
# Off for the whole process.
_mpia_env_test(trial_model trial FILTER "TrialOff.*" NPROCS 1 3 ENVIRONMENT MPIX_AUTO=model)

# What a run settles is written at MPI_Finalize (MPIX_TUNING_OUT) and read back by the next run
# (MPIX_TUNING), which then starts settled: no trial, the file's entry.
set(_trial_tuning ${CMAKE_CURRENT_BINARY_DIR}/trial_tuning_np3.txt)
_mpia_env_test(trial_tuning_out trial FILTER "TrialAgreement.Settles*" NPROCS 3 ENVIRONMENT
  "MPIX_TRIAL_TIMES=*=100,bruck=10" MPIA_TEST_TRIAL_WINNER=bruck MPIX_TUNING_OUT=${_trial_tuning})
_mpia_env_test(trial_tuning_in trial FILTER "TrialTuningFile.*" NPROCS 3 ENVIRONMENT
  MPIX_TUNING=${_trial_tuning})
if(TEST mpi.env.trial_tuning_out.np3 AND TEST mpi.env.trial_tuning_in.np3)
  set_tests_properties(mpi.env.trial_tuning_out.np3 PROPERTIES FIXTURES_SETUP trial_tuning)
  set_tests_properties(mpi.env.trial_tuning_in.np3 PROPERTIES FIXTURES_REQUIRED trial_tuning)
endif()

# The blocking calls' agreed plans measure too: on 2 emulated nodes (locality is a candidate,
# and the model's pick), injected times favouring linear, the settled line from MPIX_REPORT.
_mpia_env_test(trial_blocking trial FILTER "TrialBlocking.*" NPROCS 4 5 ENVIRONMENT
  MPIX_LOCALITY=ppn:2 MPIX_REPORT=1 "MPIX_TRIAL_TIMES=*=100,linear=10"
  MPIA_TEST_TRIAL_WINNER=linear)
# Neighbor: a ring over emulated 2-rank nodes, where direct and locality are both candidates.
_mpia_env_test(trial_neighbor trial FILTER "TrialNeighbor.*" NPROCS 4 5 ENVIRONMENT
  MPIX_LOCALITY=ppn:2 MPIX_REPORT=1)
