/**
 * @file mpi_advance.h
 * mpi_advance.h -- the public C API of mpi-advance.
 *
 * Faster all-to-all collectives layered on any MPI library: persistent and blocking
 * MPIX_Alltoall with the Bruck family and the tunable-radix algorithm (TRA),
 * MPIX_Alltoallv with pairwise, windowed multi-pair, Bruck and node-aware exchanges, and the
 * neighborhood all-to-all (MPIX_Neighbor_alltoall, _alltoallv, _alltoallw) on process
 * topologies; every one also in MPI-4's large-count form (MPIX_..._c, at the end).
 *
 * Plain C (C99) and C++. Every function returns an MPI error code (MPI_SUCCESS or an MPI
 * error class such as MPI_ERR_ARG); errors are also raised through the error handler of the
 * communicator involved (MPI_COMM_SELF's when there is none), exactly as MPI does.
 *
 * Link-level names. Open MPI's libmpi exports its own MPIX_Alltoall_init (with an MPI_Request
 * signature, from <mpi-ext.h>). So that a program can use both, every function below is
 * exported as MPIA_<name> and this header maps the MPIX_ spelling onto it with a macro. A
 * translation unit that includes this header calls ours; one that includes only <mpi-ext.h>
 * calls Open MPI's. Define MPIA_NO_MPIX_NAMES before including to get only the MPIA_ names.
 *
 * Algorithm selection. One syntax everywhere: name[:key=value[,key=value...]], e.g.
 * "tra:radix=4". Per call with the MPI_Info key "mpix_algorithm"; per communicator with
 * MPIX_Comm_set_algorithm; process-wide with the environment variable MPIX_ALLTOALL (and
 * MPIX_ALLTOALLV, MPIX_NEIGHBOR_ALLTOALLV). Info wins over the communicator's choice, which
 * wins over the environment. A bad value in info is an error (MPI_ERR_INFO_VALUE); in the
 * environment, an unknown name or malformed value is reported once on stderr and ignored (the
 * call then runs "auto"), and a parameter out of the communicator's range is clamped into it,
 * with a note on stderr. "auto" (the default) takes the first matching rule of the tuning file
 * named by MPIX_TUNING, else the cost model's cheapest algorithm and parameters for the
 * communicator's size, node map and block size; the model's constants come from MPIX_COST_MODEL
 * ("o_intra=..,o_inter=..,lat_intra=..,lat_inter=..,bw_intra=..,bw_inter=..,bw_copy=..,
 * o_recv_intra=..,o_recv_inter=..,g_inflight=.."), then the tuning file's "model" line, then
 * built-in defaults (src/collective/tuning.hpp has the file's syntax; scripts/calibrate.py and
 * scripts/calibrate_cluster.sh write one from measurements). A persistent "auto" request then
 * measures the model's shortlist during its first starts and keeps the fastest
 * (MPIX_Request_get_trial), and so do blocking calls under "auto" (alltoall: the first calls of
 * each block size, at most 240; alltoallv and neighbor: a plan of the agreed cache);
 * MPIX_AUTO=model or info "mpix_auto"="model" turns that off, and MPIX_TUNING_OUT=FILE writes what
 * was settled as tuning rules at MPI_Finalize.
 *
 * Settings. The environment variables (MPIX_ALLTOALL, MPIX_ALLTOALLV, MPIX_NEIGHBOR_ALLTOALLV,
 * MPIX_COST_MODEL, MPIX_TUNING, MPIX_LOCALITY, MPIX_DEBUG, MPIX_TAG_UB, MPIX_AUTO,
 * MPIX_PLAN_CACHE_BYTES, MPIX_PROGRESS, MPIX_REPORT, MPIX_TUNING_OUT) are read once per
 * process, the first time the library needs one; changing them later has no effect.
 * MPIX_PLAN_CACHE_BYTES=N[K|M|G] (default 64M) bounds the bytes of each per-communicator cache
 * of plans that calls without a request keep, besides their 16 plans. All but MPIX_PROGRESS,
 * MPIX_REPORT and MPIX_TUNING_OUT (and for MPIX_TUNING, the file's contents, not its path) must
 * be the same on every rank: the first call on each communicator compares
 * them, and if they differ every call on that communicator fails with MPI_ERR_ARG on every
 * rank (no rank runs a schedule its peers do not).
 *
 * Threads. The library needs no more than the thread level the application asked MPI for: it
 * makes MPI calls only from the calling thread, except for the optional progress thread, which
 * needs MPI_THREAD_MULTIPLE. Under MPI_THREAD_MULTIPLE, any thread may call any function
 * concurrently, with MPI's rules for collectives: calls that are collective over a
 * communicator (blocking calls, inits, MPIX_Comm_set_algorithm, locality) must not run
 * concurrently on the same communicator; Start/Wait/Test/Request_free of different requests
 * may, on any communicators. A request is used by one thread at a time (as an MPI_Request).
 *
 * Progress. A request moves whenever some thread is inside a library call: MPIX_Wait, MPIX_Test
 * (of any request), and every wait inside the library (inits, agreements, locality, blocking
 * calls, the first call on a communicator) drive every running request of the process, so any
 * order of starts, waits and library collectives that is legal MPI completes. A rank blocked in
 * another MPI call (e.g. MPI_Barrier) drives nothing: with the progress thread
 * (info "mpix_progress" = "thread" at init for one request, or MPIX_PROGRESS=thread for all;
 * needs MPI_THREAD_MULTIPLE, else a warning and no thread) requests also move while the user
 * computes or sits in another MPI call.
 *
 * Errors. Argument errors of collective calls are agreed: every rank fails with the same
 * class (a persistent init never leaves some ranks with a request and others without).
 * Blocking calls check only locally, as MPI does (MPIX_DEBUG=1 agrees on every call). A
 * request's communication errors (e.g. MPI_ERR_TRUNCATE) are its own: reported, with their
 * real class, only by its own MPIX_Wait/MPIX_Test (MPIX_Waitall: MPI_ERR_IN_STATUS, each
 * status's MPI_ERROR the request's code); the schedule runs to its end first, so the request
 * is then inactive with nothing posted, and can be started again or freed.
 *
 * Tags. The library's messages travel on a private duplicate of each communicator, so they
 * never match the application's. Every live persistent request holds a tag of its own,
 * agreed at init and released by MPIX_Request_free; blocking calls use tag 0. With more live
 * requests on one communicator than tags (MPI_TAG_UB, or MPIX_TAG_UB=N, a test/debug cap),
 * init fails with MPI_ERR_OTHER on every rank.
 *
 * Alltoall algorithms: pairwise, linear, bruck, modified_bruck, zero_copy_bruck,
 * tra (key radix, 2..max(2,P), default ceil(sqrt(P))), tra2 (two-level TRA over nodes: keys
 * radix_intra, default ceil(sqrt(ranks per node)), and radix_inter, default the number of
 * nodes; see MPIX_Comm_locality), system (the MPI library's own), auto.
 * MPIX_Algorithm_get lists them with their descriptions.
 */
#ifndef MPI_ADVANCE_H
#define MPI_ADVANCE_H

#include <mpi.h>
/* Open MPI declares its own MPIX_Alltoall_init (and friends) in <mpi-ext.h>. Include it first,
 * so that its prototypes are read before the MPIX_ -> MPIA_ names below exist, and a later
 * #include <mpi-ext.h> (guarded) adds nothing: either order of the two headers compiles, and a
 * translation unit that includes this one calls ours. */
#if defined(OPEN_MPI) && OPEN_MPI && !defined(MPIA_NO_MPIX_NAMES)
#include <mpi-ext.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MPIA_VERSION_MAJOR 0
#define MPIA_VERSION_MINOR 1
#define MPIA_VERSION_PATCH 0

/** Longest string MPIX_Request_get_algorithm writes, terminating NUL included. */
#define MPIX_MAX_ALGORITHM_STRING 256

/** Longest string MPIX_Request_get_trial writes, terminating NUL included. */
#define MPIX_MAX_TRIAL_STRING 1024

/** The info key (and its value syntax) that selects an algorithm for one call. */
#define MPIX_INFO_KEY_ALGORITHM "mpix_algorithm"
/** The info key that turns a persistent auto request's measured trial off ("model") or on
 * ("measure", the default unless the environment says MPIX_AUTO=model). */
#define MPIX_INFO_KEY_AUTO "mpix_auto"

/** Opaque persistent-collective request. */
typedef struct mpia_request* MPIX_Request;
#define MPIX_REQUEST_NULL ((MPIX_Request)0)

#ifndef MPIA_NO_MPIX_NAMES
#define MPIX_Alltoall_init MPIA_Alltoall_init
#define MPIX_Alltoall MPIA_Alltoall
#define MPIX_Alltoallv_init MPIA_Alltoallv_init
#define MPIX_Alltoallv MPIA_Alltoallv
#define MPIX_Start MPIA_Start
#define MPIX_Startall MPIA_Startall
#define MPIX_Wait MPIA_Wait
#define MPIX_Waitall MPIA_Waitall
#define MPIX_Test MPIA_Test
#define MPIX_Request_free MPIA_Request_free
#define MPIX_Request_get_algorithm MPIA_Request_get_algorithm
#define MPIX_Request_get_trial MPIA_Request_get_trial
#define MPIX_Algorithm_get MPIA_Algorithm_get
#define MPIX_Get_version MPIA_Get_version
#define MPIX_Request_get_traffic MPIA_Request_get_traffic
#define MPIX_Request_get_memory MPIA_Request_get_memory
#define MPIX_Comm_locality MPIA_Comm_locality
#define MPIX_Comm_rank_locality MPIA_Comm_rank_locality
#define MPIX_Comm_locality_split MPIA_Comm_locality_split
#define MPIX_Neighbor_alltoallv MPIA_Neighbor_alltoallv
#define MPIX_Neighbor_alltoallv_init MPIA_Neighbor_alltoallv_init
#define MPIX_Neighbor_alltoall MPIA_Neighbor_alltoall
#define MPIX_Neighbor_alltoall_init MPIA_Neighbor_alltoall_init
#define MPIX_Neighbor_alltoallw MPIA_Neighbor_alltoallw
#define MPIX_Neighbor_alltoallw_init MPIA_Neighbor_alltoallw_init
#define MPIX_Alltoall_c MPIA_Alltoall_c
#define MPIX_Alltoall_init_c MPIA_Alltoall_init_c
#define MPIX_Alltoallv_c MPIA_Alltoallv_c
#define MPIX_Alltoallv_init_c MPIA_Alltoallv_init_c
#define MPIX_Neighbor_alltoall_c MPIA_Neighbor_alltoall_c
#define MPIX_Neighbor_alltoall_init_c MPIA_Neighbor_alltoall_init_c
#define MPIX_Neighbor_alltoallv_c MPIA_Neighbor_alltoallv_c
#define MPIX_Neighbor_alltoallv_init_c MPIA_Neighbor_alltoallv_init_c
#define MPIX_Neighbor_alltoallw_c MPIA_Neighbor_alltoallw_c
#define MPIX_Neighbor_alltoallw_init_c MPIA_Neighbor_alltoallw_init_c
#define MPIX_Comm_set_algorithm MPIA_Comm_set_algorithm
#define MPIX_Ialltoall MPIA_Ialltoall
#define MPIX_Ialltoall_c MPIA_Ialltoall_c
#define MPIX_Ialltoallv MPIA_Ialltoallv
#define MPIX_Ialltoallv_c MPIA_Ialltoallv_c
#define MPIX_Ineighbor_alltoall MPIA_Ineighbor_alltoall
#define MPIX_Ineighbor_alltoall_c MPIA_Ineighbor_alltoall_c
#define MPIX_Ineighbor_alltoallv MPIA_Ineighbor_alltoallv
#define MPIX_Ineighbor_alltoallv_c MPIA_Ineighbor_alltoallv_c
#define MPIX_Ineighbor_alltoallw MPIA_Ineighbor_alltoallw
#define MPIX_Ineighbor_alltoallw_c MPIA_Ineighbor_alltoallw_c
#endif

/**
 * Persistent all-to-all. Same arguments as MPI_Alltoall plus an info object (MPI_INFO_NULL or
 * one carrying "mpix_algorithm") and the request to create. Collective over comm: every rank
 * must call it, in the same order as its other collectives on comm, and all must select the
 * same algorithm. All schedule building, datatype creation and allocation happen here; the
 * buffers are bound to the request and read/written by each MPIX_Start..MPIX_Wait cycle.
 * sendbuf may be MPI_IN_PLACE (then sendcount/sendtype are ignored and the data is taken from
 * recvbuf at each start). The request is created inactive. Info keys: "mpix_algorithm" (see
 * above) and "mpix_progress" ("thread": this request is also driven by the progress thread;
 * "calls": it is not, whatever MPIX_PROGRESS says); the same for every init below. Datatypes
 * must be committed (MPI_ERR_TYPE); sizes are MPI_Count, so one element may exceed 2 GiB.
 */
int MPIA_Alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPIX_Request* request);

/** Blocking all-to-all with exactly MPI_Alltoall's signature; algorithm from MPIX_ALLTOALL. */
int MPIA_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/**
 * Persistent all-to-all with per-peer counts and displacements: MPI_Alltoallv's arguments plus
 * info and the request. Collective; everything is agreed and built here: one MPI_Alltoall of
 * the byte counts checks that every pair agrees (MPI_ERR_TRUNCATE on every rank otherwise),
 * one allreduce agrees on the algorithm. The count and displacement arrays are read only
 * here. Displacements may be negative (a base address inside or at the end of the buffer), as
 * in MPI. sendbuf may be MPI_IN_PLACE (data taken from recvbuf with recvcounts/rdispls).
 *
 * Alltoallv algorithms (info "mpix_algorithm", environment MPIX_ALLTOALLV): pairwise, linear,
 * multipair_waitall, multipair_waitany, multipair_testany (key window >= 1, default 8: the
 * exchanges in flight at once), bruck (key radix, default 2; at init it runs its rounds on the
 * blocks' sizes: K messages, O(P log P) memory), locality (node-aware: blocks for one remote
 * node gathered within the node and sent as one message per node pair and port; at init the
 * sizes a port forwards are gathered within its node: O(P) memory), system, auto. No algorithm
 * posts a zero-byte message.
 */
int MPIA_Alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                        MPIX_Request* request);

/** Blocking all-to-all-v with exactly MPI_Alltoallv's signature; algorithm from MPIX_ALLTOALLV
 * ("auto" is multipair_waitany: the direct variants interoperate, so no agreement is needed). */
int MPIA_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);

/** Start an inactive request (MPI_ERR_REQUEST if it is active or null). Allocates nothing.
 * MPIX_Startall checks every request first (null, active, or the same one twice is
 * MPI_ERR_REQUEST) and then starts none or all. */
int MPIA_Start(MPIX_Request* request);
int MPIA_Startall(int count, MPIX_Request requests[]);

/**
 * Complete an active request; it then becomes inactive and may be started again. Waiting on
 * MPIX_REQUEST_NULL or on an inactive request returns at once with an empty status. The
 * request's own error, if its execution had one, is returned (with its class) after it
 * completed. Waiting progresses every active mpi-advance request of the process, so requests
 * may be completed in any order. status may be MPI_STATUS_IGNORE; statuses may be
 * MPI_STATUSES_IGNORE. MPIX_Waitall completes every request even when some fail.
 */
int MPIA_Wait(MPIX_Request* request, MPI_Status* status);
int MPIA_Waitall(int count, MPIX_Request requests[], MPI_Status statuses[]);
int MPIA_Test(MPIX_Request* request, int* flag, MPI_Status* status);

/** Free an inactive request and everything it owns; sets *request to MPIX_REQUEST_NULL.
 * Freeing MPIX_REQUEST_NULL is a no-op; freeing an active request is MPI_ERR_REQUEST. */
int MPIA_Request_free(MPIX_Request* request);

/**
 * The algorithm comm's blocking calls (and its persistent inits whose info has no
 * "mpix_algorithm" key) use for collective ("alltoall", "alltoallv" or "neighbor_alltoallv"),
 * in the selection syntax: it overrides the environment variable for this communicator only.
 * NULL or "" returns to the environment's choice. Collective over comm, with the same values on
 * every rank: an unknown collective or a bad selection on any rank is an error on every rank
 * (MPI_ERR_ARG / MPI_ERR_INFO_VALUE), different values are MPI_ERR_ARG on every rank, and then
 * the previous choice stays.
 */
int MPIA_Comm_set_algorithm(MPI_Comm comm, const char* collective, const char* selection);

/**
 * The algorithm a request runs, with every parameter resolved, in the selection syntax
 * (e.g. "tra:radix=4"): what "auto" chose and what defaults became. name must hold
 * MPIX_MAX_ALGORITHM_STRING characters; *resultlen gets the length without the NUL.
 */
int MPIA_Request_get_algorithm(MPIX_Request request, char* name, int* resultlen);

/**
 * What a persistent "auto" request measured. When the cost model's shortlist has several
 * entries (at most 4 of ours, predicted near its pick, and the MPI library's own call), the
 * request's first starts try them in batches (one start of each, the order rotated), every start
 * a complete and correct collective; the ranks agree on the times (the slowest rank's). From the
 * 3rd batch on, an entry slower than the leader beyond the measured noise leaves (the MPI
 * library's call only when one of ours is at least 2 % faster), and the round ends when one
 * entry is left, when those left are within 2 % of each other, or after 20 batches. When one of
 * ours won, a second round tries its parameter neighbours (and a close runner-up's: at most 6)
 * against it the same way. So the trial takes at most 240 starts (3 batches a round when
 * nothing is noisy); every later start runs the settled entry. MPIX_Request_get_algorithm
 * reports the entry the next start runs (the settled one once the trial is over). The text is
 * "trying <entry> <entry>..." during the first round, "refining <entry> with <entry>..." during
 * the second, "chose <entry> after <entry>=<us>us, ...; <n> starts, ..." once it settled, and
 * empty for a request that runs no trial (a fixed algorithm, a tuning-file rule, MPIX_AUTO=model
 * or info "mpix_auto"="model", or a shortlist of one). text must hold MPIX_MAX_TRIAL_STRING
 * characters; *resultlen gets the length without the NUL.
 */
int MPIA_Request_get_trial(MPIX_Request request, char* text, int* resultlen);

/**
 * The version of the library the program runs on: MPIA_VERSION_MAJOR, _MINOR and _PATCH of the
 * release it was built from (the macros above are the header's, which a program was compiled
 * against). Any argument may be NULL. Local; callable before MPI_Init and after MPI_Finalize.
 */
int MPIA_Get_version(int* major, int* minor, int* patch);

/**
 * The registry: the index-th algorithm of a collective ("alltoall", "alltoallv" or
 * "neighbor_alltoallv"). *name and *description
 * point to static strings. Returns MPI_ERR_ARG when index is out of range, so a caller can
 * iterate from 0 until it fails. The description ends with one entry per parameter, in the
 * order MPIX_Request_get_algorithm prints them, each "; <key>: <meaning>, <min>..<max>, default
 * <value>", where min, max and value are integers, 2^k, P (ranks of the communicator), N (its
 * nodes), Q (the most ranks on one node), ceil(sqrt(X)) or max(a,X) of those: for example
 * "; radix: base of the exchange (2: Bruck, P: direct), 2..max(2,P), default
 * max(2,ceil(sqrt(P)))".
 */
int MPIA_Algorithm_get(const char* collective, int index, const char** name,
                       const char** description);

/**
 * What one MPIX_Start..MPIX_Wait cycle of a request makes this rank send: point-to-point
 * messages and bytes in all, and of those the ones to a rank on another node. The node
 * counts use the communicator's locality (see MPIX_Comm_locality), which every persistent
 * init computes. For the "system" algorithm all four are -1: the MPI library does not say.
 */
int MPIA_Request_get_traffic(MPIX_Request request, MPI_Count* messages, MPI_Count* bytes,
                             MPI_Count* internode_messages, MPI_Count* internode_bytes);

/**
 * What a request's plan holds on this rank while it lives: bytes the library allocated for it
 * (the schedule, scratch and staging buffers, the copy of the receive buffer that MPI_IN_PLACE
 * needs, the bookkeeping of its messages, the copied count and displacement arrays), the
 * persistent MPI requests it keeps (point-to-point, or the MPI library's persistent
 * collective), and the derived datatypes it made or duplicated. What the MPI library itself
 * allocates for those requests and datatypes is not counted. A request running a measured
 * trial holds every candidate's schedule until it settles. Any output may be NULL. Local.
 */
int MPIA_Request_get_memory(MPIX_Request request, MPI_Count* bytes, MPI_Count* mpi_requests,
                            MPI_Count* datatypes);

/**
 * Locality. Computed once per communicator (collective on the first call that needs it) and
 * cached with it. Nodes are numbered 0..nnodes-1 in the order of their lowest rank in comm;
 * local ranks 0..local_size-1 in rank order. Ranks need not be placed in blocks, and nodes may
 * hold different numbers of ranks.
 *
 * Detection: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), unless the environment variable
 * MPIX_LOCALITY overrides it (the same value on every process):
 *   MPIX_LOCALITY=ppn:4             world ranks 0-3 on node 0, 4-7 on node 1, ...
 *   MPIX_LOCALITY=ppn:4,roundrobin  world rank r on node r mod ceil(P/4)
 *   MPIX_LOCALITY=nodes:0,0,1,1,1,2 an explicit node id for every rank of MPI_COMM_WORLD
 * (ranks of MPI_COMM_WORLD; sub-communicators inherit). A malformed value makes every call
 * that needs locality fail with MPI_ERR_ARG on every rank: the calls above, every persistent
 * init (which computes locality first, so that node counts are known to
 * MPIX_Request_get_traffic), and blocking calls of the locality-aware algorithms.
 *
 * Below the node, package (socket) and NUMA domain come from hwloc and the process's CPU
 * binding: the logical index of the smallest package / NUMA node covering the binding, or
 * MPIX_LOCALITY_UNBOUND when the process is not bound inside one (or hwloc is not built in).
 */
#define MPIX_LOCALITY_UNBOUND (-1)
int MPIA_Comm_locality(MPI_Comm comm, int* node, int* nnodes, int* local_rank, int* local_size);
/** The same for any rank of comm (local; valid once locality is computed -- it is computed
 * here if needed, which is collective). package and numa may be NULL. */
int MPIA_Comm_rank_locality(MPI_Comm comm, int rank, int* node, int* local_rank, int* package,
                            int* numa);

/** The communicators the two-level algorithms use, new ones for the caller to free:
 * MPIX_LOCALITY_NODE: the ranks of this rank's node; MPIX_LOCALITY_CROSS: the ranks with this
 * rank's local rank, one per node. Ordered by rank in comm. Collective. */
#define MPIX_LOCALITY_NODE 0
#define MPIX_LOCALITY_CROSS 1
int MPIA_Comm_locality_split(MPI_Comm comm, int kind, MPI_Comm* newcomm);

/**
 * Neighborhood all-to-all on a communicator with a process topology (Cartesian, graph or
 * distributed graph): exactly MPI_Neighbor_alltoallv's semantics and buffer layout (MPI-4.1
 * section 7.6), including Cartesian periodic dimensions of size 1 and 2, where both neighbors
 * of a dimension are the same rank and receive block 2d still holds what the -1 neighbor sent
 * in its block 2d+1; MPI_PROC_NULL neighbors' blocks are never touched; several edges between
 * the same two ranks are matched in order. A communicator without a topology is
 * MPI_ERR_TOPOLOGY.
 *
 * Algorithms (info "mpix_algorithm", MPIX_Comm_set_algorithm with "neighbor_alltoallv",
 * environment MPIX_NEIGHBOR_ALLTOALLV; all neighbor calls, alltoallw and the _c forms too):
 * direct (one message per edge, all in flight), locality (messages between the same two nodes
 * combined into one, routed through one rank per node pair; routing computed at init),
 * system (the MPI library's own call: MPI_Neighbor_alltoall, _alltoallv or _alltoallw), auto.
 */
int MPIA_Neighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Neighbor_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPIX_Request* request);
int MPIA_Neighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Neighbor_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                                void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPIX_Request* request);

/**
 * Topology objects: a neighborhood without a communicator. MPIX_Topo_create is as if
 * MPI_Dist_graph_create_adjacent(comm, indegree, sources, MPI_UNWEIGHTED, outdegree,
 * destinations, MPI_UNWEIGHTED, info, 0, &graph) had made a communicator, without making one
 * for the user: MPIX_Neighbor_alltoallv_topo(_init) then behave exactly as
 * MPIX_Neighbor_alltoallv(_init) on that communicator (buffer layout, duplicate edges between
 * two ranks paired in order, the same algorithms, selection, agreement and errors, requests
 * driven by MPIX_Start/MPIX_Wait & co., MPIX_Request_get_algorithm). Collective over comm.
 *
 * Arguments: ranks of comm, each 0..size-1 (MPI_PROC_NULL is not a rank here, as in
 * MPI_Dist_graph_create_adjacent); sources/destinations may be NULL for a degree of 0. The
 * lists are copied. Negative degrees, NULL arrays, ranks out of range, and edge lists that do
 * not match across ranks (rank d must list s among its sources as often as s lists d among its
 * destinations; checked with one reduce-scatter of O(size) words per rank) fail with
 * MPI_ERR_ARG on every rank, and *topo is MPIX_TOPO_NULL. Info: "mpix_algorithm" sets the
 * algorithm of the object's blocking calls and of its inits without that key (as
 * MPIX_Comm_set_algorithm does for a communicator; a bad value is MPI_ERR_INFO_VALUE on every
 * rank); without it the object takes comm's MPIX_Comm_set_algorithm choice at creation, else
 * the environment (MPIX_NEIGHBOR_ALLTOALLV).
 *
 * Lifetime: the object holds a private duplicate of comm and outlives MPI_Comm_free(comm) (its
 * errors are then raised on MPI_COMM_SELF, before that on comm). MPIX_Topo_free sets *topo to
 * MPIX_TOPO_NULL (freeing MPIX_TOPO_NULL is a no-op; a NULL pointer is MPI_ERR_ARG). Requests
 * keep what they use by reference count: freeing the object while its requests are inactive or
 * active is legal, and they run, complete and are freed as usual. Passing MPIX_TOPO_NULL to a
 * collective is MPI_ERR_TOPOLOGY. Calls on one object follow the rules of calls on one
 * communicator (collective, same order on every rank, not concurrently).
 *
 * The "system" algorithm runs the MPI library's MPI_Neighbor_alltoallv on a distributed graph
 * communicator that the first call (or init) selecting it creates from the object
 * (collectively; kept and freed with the object and its requests).
 */
typedef struct MPIX_Topo_s* MPIX_Topo;
#define MPIX_TOPO_NULL ((MPIX_Topo)0)

#ifndef MPIA_NO_MPIX_NAMES
#define MPIX_Topo_create MPIA_Topo_create
#define MPIX_Topo_free MPIA_Topo_free
#define MPIX_Neighbor_alltoallv_topo MPIA_Neighbor_alltoallv_topo
#define MPIX_Neighbor_alltoallv_topo_init MPIA_Neighbor_alltoallv_topo_init
#endif

int MPIA_Topo_create(MPI_Comm comm, int indegree, const int sources[], int outdegree,
                     const int destinations[], MPI_Info info, MPIX_Topo* topo);
int MPIA_Topo_free(MPIX_Topo* topo);
int MPIA_Neighbor_alltoallv_topo(const void* sendbuf, const int sendcounts[], const int sdispls[],
                                 MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int rdispls[], MPI_Datatype recvtype, MPIX_Topo topo);
int MPIA_Neighbor_alltoallv_topo_init(const void* sendbuf, const int sendcounts[],
                                      const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                      const int recvcounts[], const int rdispls[],
                                      MPI_Datatype recvtype, MPIX_Topo topo, MPI_Info info,
                                      MPIX_Request* request);

/**
 * Neighborhood all-to-all with a datatype per block: exactly MPI_Neighbor_alltoallw's
 * arguments (displacements in bytes, MPI_Aint) and semantics, through the same algorithms,
 * selection (info "mpix_algorithm", MPIX_Comm_set_algorithm and MPIX_NEIGHBOR_ALLTOALLV, as
 * collective "neighbor_alltoallv") and error rules as MPIX_Neighbor_alltoallv. Every block's
 * datatype is checked (MPI_DATATYPE_NULL or an uncommitted type: MPI_ERR_TYPE), whatever its
 * count; the type arrays may be NULL where the degree is 0. The persistent form duplicates the
 * datatypes at init (the caller may free theirs) and reads the arrays only there.
 */
int MPIA_Neighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                            MPI_Comm comm);
int MPIA_Neighbor_alltoallw_init(const void* sendbuf, const int sendcounts[],
                                 const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                 const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                 MPIX_Request* request);

/**
 * Large counts: the MPI-4 "_c" forms. The parameters of the int forms with every count an
 * MPI_Count and every displacement an MPI_Aint (v forms: in extents of the datatype; w forms:
 * in bytes), exactly as MPI_Alltoallv_c & co.; the _init_c forms end with (comm, info,
 * request) like the other inits. They run the same algorithms, selections, agreement and error
 * rules as their int forms (which are carried inside as the same 64-bit counts and
 * displacements), and move any number of elements: a message or a copy beyond what MPI counts
 * in an int travels as a derived datatype of the block, never truncated. The "system"
 * algorithm calls the MPI library's _c function where it has them (MPI_VERSION >= 4); without
 * them, its int function when every count and displacement fits an int, else the same call
 * with each block as one element of a datatype of its elements (the v forms through
 * MPI_Alltoallw / MPI_Neighbor_alltoallw).
 */
int MPIA_Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Info info, MPIX_Request* request);
int MPIA_Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                          MPIX_Request* request);
int MPIA_Neighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm);
int MPIA_Neighbor_alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPIX_Request* request);
int MPIA_Neighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm);
int MPIA_Neighbor_alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                   const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                   const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                   MPIX_Request* request);
int MPIA_Neighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              const MPI_Datatype recvtypes[], MPI_Comm comm);
int MPIA_Neighbor_alltoallw_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                                   const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                   void* recvbuf, const MPI_Count recvcounts[],
                                   const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                   MPI_Comm comm, MPI_Info info, MPIX_Request* request);

/**
 * Nonblocking all-to-alls: MPI_Ialltoall's, MPI_Ialltoallv's and the nonblocking neighbor
 * calls' arguments, with an MPIX_Request. Each starts a plan at once and returns; complete it
 * with MPIX_Wait, MPIX_Test or MPIX_Waitall, which free the request and set it to
 * MPIX_REQUEST_NULL, as MPI does for nonblocking requests (MPIX_Start on it, and
 * MPIX_Request_free while it is active, are MPI_ERR_REQUEST). Collective: every rank calls it, in
 * the same order as its other collectives on comm; it waits for no other rank, not even as the
 * library's first call on comm (the communicator's private duplicate is then made while the call
 * progresses, and the call runs once it exists). Any number may be active at once;
 * they progress like persistent requests (any MPIX_Wait/Test, the progress thread).
 *
 * What runs is decided without agreeing: the communicator's choice (MPIX_Comm_set_algorithm) or
 * the environment (MPIX_ALLTOALL, ...), and under auto the cost model at the block size for an
 * alltoall, the direct exchange for alltoallv and neighbor calls (their sizes differ across
 * ranks); an algorithm that learns its peers' sizes at init (alltoallv bruck, hybrid, locality*,
 * neighbor locality*), or that needs the node map before any call computed it, gives way to what
 * auto runs without them. A plan for the same arguments (buffers and predefined datatypes) is
 * taken from the communicator's cache of idle plans, so a repeated call costs what a persistent
 * start costs. MPIX_Request_get_algorithm tells what a request runs.
 */
int MPIA_Ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPIX_Request* request);
int MPIA_Ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                     MPIX_Request* request);
/** Nonblocking alltoallv: see MPIX_Ialltoall. */
int MPIA_Ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                    MPIX_Request* request);
int MPIA_Ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                      MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                      const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                      MPIX_Request* request);
/** Nonblocking neighbor all-to-all (regular blocks): see MPIX_Ialltoall. */
int MPIA_Ineighbor_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPIX_Request* request);
int MPIA_Ineighbor_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPIX_Request* request);
/** Nonblocking neighbor all-to-all (counts and displacements): see MPIX_Ialltoall. */
int MPIA_Ineighbor_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPIX_Request* request);
int MPIA_Ineighbor_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                               const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPIX_Request* request);
/** Nonblocking neighbor all-to-all (a datatype per block): see MPIX_Ialltoall. */
int MPIA_Ineighbor_alltoallw(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype sendtypes[], void* recvbuf, const int recvcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                             MPI_Comm comm, MPIX_Request* request);
int MPIA_Ineighbor_alltoallw_c(const void* sendbuf, const MPI_Count sendcounts[],
                               const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                               void* recvbuf, const MPI_Count recvcounts[],
                               const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                               MPI_Comm comm, MPIX_Request* request);

#ifdef __cplusplus
}
#endif

#endif /* MPI_ADVANCE_H */
