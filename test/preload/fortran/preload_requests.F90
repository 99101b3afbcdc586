! An unmodified Fortran MPI program of nonblocking and persistent all-to-alls and the request
! calls that complete them, built twice: with `use mpi` and, with USE_MPI_F08 defined, with
! `use mpi_f08`. Run under libmpi_advance_preload.so (CMakeLists.txt), whose Fortran entry
! points (src/preload/fortran.c) convert every handle, status, index and flag to C and back.
!
! NROUNDS rounds, with data that changes every round, of
!   MPI_Ialltoall            completed by polling MPI_Test (MPI_STATUS_IGNORE)
!   MPI_Ialltoallv           uneven counts (zeros included), blocks in reverse order with gaps;
!                            polled with MPI_Request_get_status, then MPI_Wait (a status)
!   MPI_Ialltoall            in MPI_Waitany beside an MPI_Irecv / MPI_Isend pair: each index
!                            (1-based) once, the receive's status, then MPI_UNDEFINED
!   MPI_Ialltoallv           in MPI_Testsome polling beside an MPI_Irecv / MPI_Isend pair
!   MPI_Ineighbor_alltoallv  on a distributed graph (to rank+1 and rank+2, so at 1 and 2 ranks
!                            the same rank twice), uneven counts, gaps; MPI_Wait or MPI_Testall
! and 6 starts of a persistent alltoall (MPI-4's MPI_Alltoall_init; Open MPI 4.1's extension
! MPIX_Alltoall_init from mpi_ext / mpi_f08_ext), with changing data, in MPI_Startall beside a
! persistent MPI_Recv_init / MPI_Send_init pair, completed by MPI_Waitall (statuses, or
! MPI_STATUSES_IGNORE), then MPI_Request_free of the inactive requests. Without a persistent
! alltoall in the MPI (neither HAVE_MPIX_PCOLLREQ nor HAVE_MPI4_PERSISTENT), that part is
! skipped with a message. Every element of every receive buffer is checked on every rank,
! gaps included, against a formula of (source, destination, index, round); all ranks fail if
! one does. With mpi_f08 some calls leave out the optional ierror. With mpi_f08 where it has
! MPI-4's large-count forms (HAVE_F08_LARGE_COUNT), MPI_Ialltoall and MPI_Alltoall_init with
! counts of kind MPI_COUNT_KIND too.
#ifdef USE_MPI_F08
#define REQUEST type(MPI_Request)
#define COMM type(MPI_Comm)
#define STATUS type(MPI_Status)
#define STATUSES(n) type(MPI_Status) :: sts(n)
#define SOURCE_OF(s) s%MPI_SOURCE
#define TAG_OF(s) s%MPI_TAG
#define STATUS_I(i) sts(i)
#else
#define REQUEST integer
#define COMM integer
#define STATUS integer, dimension(MPI_STATUS_SIZE)
#define STATUSES(n) integer :: sts(MPI_STATUS_SIZE, n)
#define SOURCE_OF(s) s(MPI_SOURCE)
#define TAG_OF(s) s(MPI_TAG)
#define STATUS_I(i) sts(:, i)
#endif
#if defined(HAVE_MPIX_PCOLLREQ)
#define ALLTOALL_INIT MPIX_Alltoall_init
#elif defined(HAVE_MPI4_PERSISTENT)
#define ALLTOALL_INIT MPI_Alltoall_init
#endif
program preload_requests
#ifdef USE_MPI_F08
  use mpi_f08
#ifdef HAVE_MPIX_PCOLLREQ
  use mpi_f08_ext
#endif
#else
  use mpi
#ifdef HAVE_MPIX_PCOLLREQ
  use mpi_ext
#endif
#endif
  use, intrinsic :: iso_fortran_env, only : error_unit, output_unit
  implicit none
  integer, parameter :: NROUNDS = 4, NSTARTS = 6, SENTINEL = -7, B = 3
  integer :: rank, nprocs, ierr, errors, total, left, right

  errors = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(rank - 1 + nprocs, nprocs)
  right = mod(rank + 1, nprocs)

  call test_nonblocking()
  call test_persistent()
  call test_neighbor()
#ifdef HAVE_F08_LARGE_COUNT
  call test_large_count()
#endif

  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      write (output_unit, '(a)') 'PASS'
    else
      write (output_unit, '(a,i0,a)') 'FAIL: ', total, ' wrong values'
    end if
    flush (output_unit)
  end if
  if (total /= 0) error stop 1
  call MPI_Finalize(ierr)

contains

#include "checks.inc"

  subroutine expect_true(ok, what, r)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in) :: r
    if (.not. ok) call expect(0, 1, what, r, -1)
  end subroutine expect_true

  subroutine check_ierr(what, r)
    character(len=*), intent(in) :: what
    integer, intent(in) :: r
    if (ierr /= MPI_SUCCESS) call expect(ierr, MPI_SUCCESS, what // ' ierror', r, -1)
  end subroutine check_ierr

  ! Elements from src to dst in round r: uneven, zero for some pairs.
  pure integer function vcount(src, dst, r)
    integer, intent(in) :: src, dst, r
    vcount = mod(src + 2 * dst + r, 4)
  end function vcount

  ! Displacements of blocks of the given counts, in reverse order of peers or not, gap
  ! elements between them.
  subroutine layout(counts, displs, m, reversed, gap)
    integer, intent(in) :: counts(0:), m, gap
    integer, intent(out) :: displs(0:)
    logical, intent(in) :: reversed
    integer :: x, j, at
    at = 0
    do x = 0, m - 1
      j = x
      if (reversed) j = m - 1 - x
      displs(j) = at
      at = at + counts(j) + gap
    end do
  end subroutine layout

  ! r: block i (counts(i) at displs(i)) holds val(sources(i), kinds(i), k, stamp), every other
  ! element SENTINEL.
  subroutine check_blocks(r, counts, displs, m, sources, kinds, round, stamp, what)
    integer, intent(in) :: r(0:), counts(0:), displs(0:), m, sources(0:), kinds(0:), round, stamp
    character(len=*), intent(in) :: what
    logical :: covered(0:size(r) - 1)
    integer :: i, k
    covered = .false.
    do i = 0, m - 1
      do k = 0, counts(i) - 1
        call expect(r(displs(i) + k), val(sources(i), kinds(i), k, stamp), what, round, &
                    displs(i) + k)
        covered(displs(i) + k) = .true.
      end do
    end do
    do k = 0, size(r) - 1
      if (.not. covered(k)) call expect(r(k), SENTINEL, what // ' gap', round, k)
    end do
  end subroutine check_blocks

  ! The alltoall blocks of stamp st: s to send, r cleared.
  subroutine fill_alltoall(s, r, st)
    integer, intent(out) :: s(0:), r(0:)
    integer, intent(in) :: st
    integer :: i, k
    do i = 0, nprocs - 1
      do k = 0, B - 1
        s(i * B + k) = val(rank, i, k, st)
      end do
    end do
    r = SENTINEL
  end subroutine fill_alltoall

  subroutine check_alltoall(r, round, st, what)
    integer, intent(in) :: r(0:), round, st
    character(len=*), intent(in) :: what
    integer :: i, k
    do i = 0, nprocs - 1
      do k = 0, B - 1
        call expect(r(i * B + k), val(i, rank, k, st), what, round, i * B + k)
      end do
    end do
  end subroutine check_alltoall

  ! The alltoallv arguments of stamp st: counts, displacements (send reversed with gap 1,
  ! receive in order with gap 2), s to send, r cleared.
  subroutine fill_alltoallv(s, r, sc, sd, rc, rd, st)
    integer, intent(out) :: s(0:), r(0:), sc(0:), sd(0:), rc(0:), rd(0:)
    integer, intent(in) :: st
    integer :: i, k
    do i = 0, nprocs - 1
      sc(i) = vcount(rank, i, st)
      rc(i) = vcount(i, rank, st)
    end do
    call layout(sc, sd, nprocs, .true., 1)
    call layout(rc, rd, nprocs, .false., 2)
    s = SENTINEL
    do i = 0, nprocs - 1
      do k = 0, sc(i) - 1
        s(sd(i) + k) = val(rank, i, k, st)
      end do
    end do
    r = SENTINEL
  end subroutine fill_alltoallv

  ! The point-to-point pair beside a collective: 2 INTEGERs to the right, from the left.
  subroutine check_pair(pr, round, st, what)
    integer, intent(in) :: pr(0:1), round, st
    character(len=*), intent(in) :: what
    call expect(pr(0), val(left, rank, 100, st), what, round, 0)
    call expect(pr(1), val(left, rank, 101, st), what, round, 1)
  end subroutine check_pair

  subroutine check_recv_status(s, tag, round, what)
    STATUS, intent(in) :: s
    integer, intent(in) :: tag, round
    character(len=*), intent(in) :: what
    integer :: n
    call expect(SOURCE_OF(s), left, what // ' MPI_SOURCE', round, -1)
    call expect(TAG_OF(s), tag, what // ' MPI_TAG', round, -1)
    call MPI_Get_count(s, MPI_INTEGER, n, ierr)
    call expect(n, 2, what // ' count', round, -1)
  end subroutine check_recv_status

  subroutine test_nonblocking()
    integer, allocatable, asynchronous :: s(:), r(:)
    integer, asynchronous :: ps(0:1), pr(0:1)
    integer, allocatable :: sc(:), sd(:), rc(:), rd(:), peers(:), mine(:)
    REQUEST :: req, reqs(3)
    STATUS :: st
    STATUSES(3)
    logical :: flag, seen(3)
    integer :: round, i, idx, cap, outcount, done, indices(3), stamp
    cap = 4 * nprocs + 2 * nprocs + B * nprocs
    allocate (s(0:cap - 1), r(0:cap - 1), sc(0:nprocs - 1), sd(0:nprocs - 1), &
              rc(0:nprocs - 1), rd(0:nprocs - 1), peers(0:nprocs - 1), mine(0:nprocs - 1))
    do i = 0, nprocs - 1
      peers(i) = i
    end do
    mine = rank
    do round = 0, NROUNDS - 1
      ! MPI_Ialltoall, polled with MPI_Test.
      call fill_alltoall(s, r, round)
      ierr = -1
      call MPI_Ialltoall(s, B, MPI_INTEGER, r, B, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call check_ierr('ialltoall', round)
      flag = .false.
      do while (.not. flag)
        ierr = -1
        call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
        call check_ierr('test', round)
        if (ierr /= MPI_SUCCESS) exit
      end do
      call expect_true(req == MPI_REQUEST_NULL, 'MPI_Test returns MPI_REQUEST_NULL', round)
      call check_alltoall(r, round, round, 'ialltoall + test')

      ! MPI_Ialltoallv, polled with MPI_Request_get_status (which leaves the request), then
      ! MPI_Wait.
      stamp = round + NROUNDS
      call fill_alltoallv(s, r, sc, sd, rc, rd, stamp)
      call MPI_Ialltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, req, &
                          ierr)
      call check_ierr('ialltoallv', round)
      flag = .false.
      do while (.not. flag)
#ifdef USE_MPI_F08
        call MPI_Request_get_status(req, flag, st)
#else
        call MPI_Request_get_status(req, flag, st, ierr)
        call check_ierr('request_get_status', round)
        if (ierr /= MPI_SUCCESS) exit
#endif
      end do
      call expect_true(req /= MPI_REQUEST_NULL, 'MPI_Request_get_status keeps the request', &
                       round)
#ifdef USE_MPI_F08
      call MPI_Wait(req, st)
#else
      ierr = -1
      call MPI_Wait(req, st, ierr)
      call check_ierr('wait', round)
#endif
      call expect_true(req == MPI_REQUEST_NULL, 'MPI_Wait returns MPI_REQUEST_NULL', round)
      call check_blocks(r, rc, rd, nprocs, peers, mine, round, stamp, 'ialltoallv + wait')

      ! MPI_Ialltoall in MPI_Waitany beside a receive and a send.
      stamp = round + 2 * NROUNDS
      call fill_alltoall(s, r, stamp)
      pr = SENTINEL
      ps = [val(rank, right, 100, stamp), val(rank, right, 101, stamp)]
      call MPI_Irecv(pr, 2, MPI_INTEGER, left, 10 + round, MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_Ialltoall(s, B, MPI_INTEGER, r, B, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
      call MPI_Isend(ps, 2, MPI_INTEGER, right, 10 + round, MPI_COMM_WORLD, reqs(3), ierr)
      seen = .false.
      do i = 1, 3
        idx = -1
        ierr = -1
        call MPI_Waitany(3, reqs, idx, st, ierr)
        call check_ierr('waitany', round)
        if (idx < 1 .or. idx > 3) then
          call expect(idx, 1, 'waitany index in 1..3', round, i)
          exit
        end if
        call expect_true(.not. seen(idx), 'waitany returns each index once', round)
        seen(idx) = .true.
        call expect_true(reqs(idx) == MPI_REQUEST_NULL, 'waitany frees the request', round)
        if (idx == 1) call check_recv_status(st, 10 + round, round, 'waitany receive status')
      end do
      call MPI_Waitany(3, reqs, idx, st, ierr)
      call expect(idx, MPI_UNDEFINED, 'waitany on null requests', round, -1)
      call check_alltoall(r, round, stamp, 'ialltoall + waitany')
      call check_pair(pr, round, stamp, 'irecv + waitany')

      ! MPI_Ialltoallv in MPI_Testsome polling beside a receive and a send.
      stamp = round + 3 * NROUNDS
      call fill_alltoallv(s, r, sc, sd, rc, rd, stamp)
      pr = SENTINEL
      ps = [val(rank, right, 100, stamp), val(rank, right, 101, stamp)]
      call MPI_Isend(ps, 2, MPI_INTEGER, right, 20 + round, MPI_COMM_WORLD, reqs(1), ierr)
      call MPI_Ialltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                          reqs(2), ierr)
      call MPI_Irecv(pr, 2, MPI_INTEGER, left, 20 + round, MPI_COMM_WORLD, reqs(3), ierr)
      seen = .false.
      done = 0
      do while (done < 3)
        outcount = -1
        indices = -1
        call MPI_Testsome(3, reqs, outcount, indices, sts, ierr)
        call check_ierr('testsome', round)
        if (ierr /= MPI_SUCCESS .or. outcount < 0 .or. outcount > 3) then
          call expect(outcount, 0, 'testsome outcount in 0..3', round, done)
          exit
        end if
        do i = 1, outcount
          idx = indices(i)
          if (idx < 1 .or. idx > 3) then
            call expect(idx, 1, 'testsome index in 1..3', round, i)
            done = 3
            exit
          end if
          call expect_true(.not. seen(idx), 'testsome returns each index once', round)
          seen(idx) = .true.
          call expect_true(reqs(idx) == MPI_REQUEST_NULL, 'testsome frees the request', round)
          if (idx == 3) call check_recv_status(STATUS_I(i), 20 + round, round, &
                                               'testsome receive status')
        end do
        done = done + outcount
      end do
      call MPI_Testsome(3, reqs, outcount, indices, sts, ierr)
      call expect(outcount, MPI_UNDEFINED, 'testsome on null requests', round, -1)
      call check_blocks(r, rc, rd, nprocs, peers, mine, round, stamp, 'ialltoallv + testsome')
      call check_pair(pr, round, stamp, 'irecv + testsome')
    end do
    deallocate (s, r, sc, sd, rc, rd, peers, mine)
  end subroutine test_nonblocking

  subroutine test_persistent()
#ifdef ALLTOALL_INIT
    integer, allocatable, asynchronous :: s(:), r(:)
    integer, asynchronous :: ps(0:1), pr(0:1)
    REQUEST :: reqs(3)
    STATUSES(3)
    integer :: round, i, stamp
    allocate (s(0:B * nprocs - 1), r(0:B * nprocs - 1))
    ierr = -1
    call ALLTOALL_INIT(s, B, MPI_INTEGER, r, B, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, &
                       reqs(2), ierr)
    call check_ierr('alltoall_init', -1)
    call MPI_Recv_init(pr, 2, MPI_INTEGER, left, 30, MPI_COMM_WORLD, reqs(1), ierr)
    call MPI_Send_init(ps, 2, MPI_INTEGER, right, 30, MPI_COMM_WORLD, reqs(3), ierr)
    do round = 0, NSTARTS - 1
      stamp = round + 4 * NROUNDS
      call fill_alltoall(s, r, stamp)
      pr = SENTINEL
      ps = [val(rank, right, 100, stamp), val(rank, right, 101, stamp)]
      ierr = -1
      call MPI_Startall(3, reqs, ierr)
      call check_ierr('startall', round)
      ierr = -1
      if (mod(round, 2) == 0) then
        call MPI_Waitall(3, reqs, sts, ierr)
        call check_recv_status(STATUS_I(1), 30, round, 'waitall receive status')
      else
        call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE, ierr)
      end if
      call check_ierr('waitall', round)
      do i = 1, 3
        call expect_true(reqs(i) /= MPI_REQUEST_NULL, 'persistent requests stay', round)
      end do
      call check_alltoall(r, round, stamp, 'persistent alltoall')
      call check_pair(pr, round, stamp, 'persistent receive')
    end do
    do i = 1, 3
      ierr = -1
      call MPI_Request_free(reqs(i), ierr)
      call check_ierr('request_free', i)
      call expect_true(reqs(i) == MPI_REQUEST_NULL, 'MPI_Request_free sets MPI_REQUEST_NULL', i)
    end do
    deallocate (s, r)
#else
    if (rank == 0) write (output_unit, '(a)') 'preload_requests: this MPI has no persistent ' // &
        'alltoall in Fortran (MPI_Alltoall_init / MPIX_Alltoall_init): skipped'
#endif
  end subroutine test_persistent

  ! A distributed graph: rank sends its block j (j = 0, 1) to rank + 1 + j and receives in
  ! slot j from rank - 1 - j, which sent it as its block j. vcount(src, j, round) elements.
  subroutine test_neighbor()
    integer, parameter :: deg = 2
    COMM :: graph
    integer :: dsts(0:deg - 1), srcs(0:deg - 1), kinds(0:deg - 1), round, j, k, stamp
    integer :: sc(0:deg - 1), sd(0:deg - 1), rc(0:deg - 1), rd(0:deg - 1)
    integer, asynchronous :: s(0:15), r(0:15)
    REQUEST :: req, reqs(1)
    logical :: flag
    do j = 0, deg - 1
      dsts(j) = mod(rank + 1 + j, nprocs)
      srcs(j) = mod(rank - 1 - j + 2 * nprocs, nprocs)
      kinds(j) = j
    end do
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, deg, srcs, MPI_UNWEIGHTED, deg, dsts, &
                                        MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph, ierr)
    do round = 0, NROUNDS - 1
      stamp = round + 5 * NROUNDS
      do j = 0, deg - 1
        sc(j) = vcount(rank, j, stamp)
        rc(j) = vcount(srcs(j), j, stamp)
      end do
      call layout(sc, sd, deg, .true., 2)
      call layout(rc, rd, deg, .false., 1)
      s = SENTINEL
      do j = 0, deg - 1
        do k = 0, sc(j) - 1
          s(sd(j) + k) = val(rank, j, k, stamp)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, graph, req, &
                                   ierr)
      call check_ierr('ineighbor_alltoallv', round)
      if (mod(round, 2) == 0) then
        call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
        call expect_true(req == MPI_REQUEST_NULL, 'MPI_Wait returns MPI_REQUEST_NULL', round)
      else
        reqs(1) = req
        flag = .false.
        do while (.not. flag)
          ierr = -1
          call MPI_Testall(1, reqs, flag, MPI_STATUSES_IGNORE, ierr)
          call check_ierr('testall', round)
          if (ierr /= MPI_SUCCESS) exit
        end do
        call expect_true(reqs(1) == MPI_REQUEST_NULL, 'MPI_Testall returns MPI_REQUEST_NULL', &
                         round)
      end if
      call check_blocks(r, rc, rd, deg, srcs, kinds, round, stamp, 'ineighbor_alltoallv')
    end do
    call MPI_Comm_free(graph, ierr)
  end subroutine test_neighbor

#ifdef HAVE_F08_LARGE_COUNT
  ! mpi_f08's large-count forms (counts of kind MPI_COUNT_KIND: MPI_Ialltoall_c underneath, and
  ! MPI_Alltoall_init_c where the MPI has the persistent one), NROUNDS rounds each.
  subroutine test_large_count()
    integer, allocatable :: s(:), r(:)
    integer(kind=MPI_COUNT_KIND) :: n
    type(MPI_Request) :: req
    integer :: round
    n = B
    allocate (s(0:B * nprocs - 1), r(0:B * nprocs - 1))
    do round = 0, NROUNDS - 1
      call fill_alltoall(s, r, 40 + round)
      call MPI_Ialltoall(s, n, MPI_INTEGER, r, n, MPI_INTEGER, MPI_COMM_WORLD, req, ierr)
      call check_ierr('ialltoall (large count)', round)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      call check_alltoall(r, round, 40 + round, 'ialltoall (large count) + wait')
    end do
#ifdef HAVE_MPI4_PERSISTENT
    call MPI_Alltoall_init(s, n, MPI_INTEGER, r, n, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, &
                           req, ierr)
    call check_ierr('alltoall_init (large count)', 0)
    do round = 0, NROUNDS - 1
      call fill_alltoall(s, r, 50 + round)
      call MPI_Start(req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      call check_alltoall(r, round, 50 + round, 'alltoall_init (large count) + start')
    end do
    call MPI_Request_free(req, ierr)
    call expect_true(req == MPI_REQUEST_NULL, 'MPI_Request_free (large count)', 0)
#endif
  end subroutine test_large_count
#endif

end program preload_requests
