! The Fortran module mpi_advance against mpi_f08's own collectives, on every rank, element by
! element: persistent MPIX_Alltoall_init (with an info selection, and MPI_IN_PLACE under the
! communicator's selection), MPIX_Alltoallv_init (uneven counts with zeros, gaps),
! MPIX_Alltoallw(_init) and MPIX_Ialltoallw with a type with a hole per block (against a formula),
! MPIX_Neighbor_alltoallv_init and MPIX_Neighbor_alltoall_init on a ring, MPIX_Ialltoall, each started 3 times
! with changed data; the blocking calls; MPIX_Ineighbor_alltoallv (MPIX_Test polling);
! MPIX_Neighbor_alltoallw(_init) and MPIX_Ineighbor_alltoallw with a datatype with a
! hole and byte displacements (against the neighbors' values too); MPIX_Wait/Test/Waitall with
! statuses (empty: count 0) and with MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE; the optional ierror
! present and absent; a non-contiguous buffer (MPI_ERR_BUFFER); the query and locality
! functions. All ranks fail if one does.
program test_module
  use mpi_f08
  use mpi_advance
  implicit none
  integer :: rank, P, errors, total, iter, i, j, k, ierr, n
  integer, parameter :: B = 3
  integer, allocatable, asynchronous :: sbuf(:), rbuf(:)
  integer, allocatable :: want(:), sc(:), sd(:), rc(:), rd(:), nwant(:)
  integer, allocatable, asynchronous :: nr(:)
  type(MPIX_Request) :: req, reqs(2), nbreq
  type(MPI_Status) :: status, statuses(2)
  type(MPI_Comm) :: ring, nodecomm
  type(MPI_Info) :: info
  character(len=MPIX_MAX_ALGORITHM_STRING) :: name
  character(len=64) :: aname
  character(len=512) :: adesc
  integer(MPI_COUNT_KIND) :: msgs, bytes, imsgs, ibytes, mbytes, mreqs, mtypes
  logical :: flag
  integer :: node, nnodes, lrank, lsize, node2, lrank2, pkg, numa
  type(MPI_Datatype) :: vec, wst(2), wrt(2)
  integer :: wsc(2), wrc(2), left, right, isz, nw
  type(MPI_Comm) :: wcomm(2)
  integer(MPI_ADDRESS_KIND) :: wsd(2), wrd(2)
  integer, allocatable :: asc(:), asd(:), arc(:), ard(:), ass(:), ars(:)
  type(MPI_Datatype), allocatable :: ast(:), art(:)
  type(MPI_Datatype) :: hole
  integer :: ns, nrv

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, P)
  errors = 0

  ! --- persistent alltoall, then in place ---
  allocate (sbuf(B*P), rbuf(B*P), want(B*P))
  call MPI_Info_create(info)
  call MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "pairwise")
  call MPIX_Alltoall_init(sbuf, B, MPI_INTEGER, rbuf, B, MPI_INTEGER, MPI_COMM_WORLD, &
                          info, req, ierr)
  call check(ierr == MPI_SUCCESS, "MPIX_Alltoall_init ierror")
  call MPI_Info_free(info)
  do iter = 1, 3
    call fill(sbuf, B)
    rbuf = -1
    call poison(status)
    call MPIX_Start(req)
    call MPIX_Wait(req, status, ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Wait ierror")
    call check_status(status, "MPIX_Wait status")
    call MPI_Alltoall(sbuf, B, MPI_INTEGER, want, B, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(rbuf == want), "persistent alltoall")
    rbuf = -1
    call MPIX_Alltoall(sbuf, B, MPI_INTEGER, rbuf, B, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(rbuf == want), "blocking alltoall")
    rbuf = -1
    call MPIX_Ialltoall(sbuf, B, MPI_INTEGER, rbuf, B, MPI_INTEGER, MPI_COMM_WORLD, reqs(1), ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Ialltoall ierror")
    call MPIX_Wait(reqs(1), status, ierr)
    call check(ierr == MPI_SUCCESS .and. reqs(1) == MPIX_REQUEST_NULL, "MPIX_Ialltoall completed")
    call check(all(rbuf == want), "nonblocking alltoall")
  end do
  call MPIX_Request_get_algorithm(req, name, n)
  call check(n > 0 .and. len_trim(name) == n .and. name(1:min(n, 8)) == "pairwise", &
             "MPIX_Request_get_algorithm: the info's selection")
  call MPIX_Request_get_traffic(req, msgs, bytes, imsgs, ibytes)
  call check(msgs >= 0 .and. bytes >= 0, "MPIX_Request_get_traffic")
  call MPIX_Request_get_memory(req, mbytes, mreqs, mtypes, ierr)
  call check(ierr == MPI_SUCCESS .and. mbytes > 0 .and. mreqs >= 0 .and. mtypes >= 0, &
             "MPIX_Request_get_memory")
  call MPIX_Request_get_trial(req, name, n, ierr)
  call check(ierr == MPI_SUCCESS .and. n == 0 .and. name == "", &
             "MPIX_Request_get_trial: nothing measured for an explicit algorithm")
  call MPIX_Request_free(req)
  call check(req == MPIX_REQUEST_NULL, "MPIX_Request_free sets MPIX_REQUEST_NULL")
  call MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "linear", ierr)
  call check(ierr == MPI_SUCCESS, "MPIX_Comm_set_algorithm")
  call MPIX_Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, B, MPI_INTEGER, &
                          MPI_COMM_WORLD, MPI_INFO_NULL, req)
  call MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "")
  call MPIX_Request_get_algorithm(req, name, n, ierr)
  call check(ierr == MPI_SUCCESS .and. name == "linear" .and. n == 6, &
             "MPIX_Request_get_algorithm: the communicator's selection")
  do iter = 1, 3
    call fill(rbuf, B)
    call MPI_Alltoall(rbuf, B, MPI_INTEGER, want, B, MPI_INTEGER, MPI_COMM_WORLD)
    call MPIX_Start(req, ierr)
    if (iter == 2) then
      call MPIX_Wait(req, MPI_STATUS_IGNORE)
    else
      call MPIX_Wait(req)
    end if
    call check(all(rbuf == want), "persistent alltoall in place")
  end do
  call MPIX_Request_free(req)
  deallocate (sbuf, rbuf, want)

  ! --- persistent alltoallv: count(i -> j) = mod(i + 2j, 4), blocks with a gap of 1 ---
  allocate (sc(P), sd(P), rc(P), rd(P))
  do j = 1, P
    sc(j) = mod((rank) + 2*(j - 1), 4)
    rc(j) = mod((j - 1) + 2*rank, 4)
  end do
  sd(1) = 0
  rd(1) = 0
  do j = 2, P
    sd(j) = sd(j - 1) + sc(j - 1) + 1
    rd(j) = rd(j - 1) + rc(j - 1) + 1
  end do
  allocate (sbuf(sd(P) + sc(P) + 1), rbuf(rd(P) + rc(P) + 1), want(rd(P) + rc(P) + 1))
  call MPIX_Alltoallv_init(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, &
                           MPI_INFO_NULL, reqs(1))
  do iter = 1, 3
    call fill(sbuf, 1)
    rbuf = -7
    want = -7
    call MPIX_Startall(1, reqs(1:1))
    flag = .false.
    call poison(status)
    do while (.not. flag)
      if (iter == 2) then
        call MPIX_Test(reqs(1), flag, MPI_STATUS_IGNORE)
      else
        call MPIX_Test(reqs(1), flag, status)
      end if
    end do
    if (iter /= 2) call check_status(status, "MPIX_Test status")
    call MPI_Alltoallv(sbuf, sc, sd, MPI_INTEGER, want, rc, rd, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(rbuf == want), "persistent alltoallv")
    rbuf = -7
    call MPIX_Alltoallv(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking alltoallv")
  end do
  call MPIX_Request_free(reqs(1))
  deallocate (sbuf, rbuf, want)

  ! --- MPIX_Alltoallw_init, MPIX_Alltoallw, MPIX_Ialltoallw: count(i -> j) = mod(i + 2j, 4),
  ! block j an MPI_INTEGER run or (by parity) integers each followed by a hole (a resized
  ! integer of extent 2); byte displacements; the reference from the formula, holes included ---
  call MPI_Type_size(MPI_INTEGER, isz)
  call MPI_Type_create_resized(MPI_INTEGER, 0_MPI_ADDRESS_KIND, int(2*isz, MPI_ADDRESS_KIND), hole)
  call MPI_Type_commit(hole)
  allocate (asc(P), asd(P), arc(P), ard(P), ass(P), ars(P), ast(P), art(P))
  ns = 0
  nrv = 0
  do j = 1, P
    asc(j) = mod(rank + 2*(j - 1), 4)
    arc(j) = mod((j - 1) + 2*rank, 4)
    ass(j) = 1 + mod(rank + j, 2)
    ars(j) = 1 + mod(j, 2)
    ast(j) = MPI_INTEGER
    art(j) = MPI_INTEGER
    if (ass(j) == 2) ast(j) = hole
    if (ars(j) == 2) art(j) = hole
    asd(j) = ns*isz
    ard(j) = nrv*isz
    ns = ns + asc(j)*ass(j) + 1
    nrv = nrv + arc(j)*ars(j) + 1
  end do
  allocate (sbuf(ns), rbuf(nrv), want(nrv))
  call MPIX_Alltoallw_init(sbuf, asc, asd, ast, rbuf, arc, ard, art, MPI_COMM_WORLD, &
                           MPI_INFO_NULL, req, ierr)
  call check(ierr == MPI_SUCCESS, "MPIX_Alltoallw_init ierror")
  do iter = 1, 3
    sbuf = -7
    want = -7
    do j = 1, P
      do k = 1, asc(j)
        sbuf(asd(j)/isz + 1 + (k - 1)*ass(j)) = wvalue(rank, j - 1, k)
      end do
      do k = 1, arc(j)
        want(ard(j)/isz + 1 + (k - 1)*ars(j)) = wvalue(j - 1, rank, k)
      end do
    end do
    rbuf = -7
    call MPIX_Start(req)
    call MPIX_Wait(req, MPI_STATUS_IGNORE)
    call check(all(rbuf == want), "persistent alltoallw")
    rbuf = -7
    call MPIX_Alltoallw(sbuf, asc, asd, ast, rbuf, arc, ard, art, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking alltoallw")
    rbuf = -7
    call MPIX_Ialltoallw(sbuf, asc, asd, ast, rbuf, arc, ard, art, MPI_COMM_WORLD, nbreq, ierr)
    call MPIX_Wait(nbreq, MPI_STATUS_IGNORE)
    call check(ierr == MPI_SUCCESS .and. nbreq == MPIX_REQUEST_NULL .and. all(rbuf == want), &
               "nonblocking alltoallw")
  end do
  call MPIX_Request_free(req)
  call MPI_Type_free(hole)
  deallocate (sbuf, rbuf, want, asc, asd, arc, ard, ass, ars, ast, art)

  ! --- persistent neighbor alltoallv on a ring: 1 to the left, 2 to the right. Periodic from 3
  ! ranks (on periodic dimensions of size 1 and 2 both MPIs' own neighbor collectives mix up the
  ! directions: docs/guide.md, Neighbor alltoall). The reference is the values the neighbors
  ! sent, not MPI's own call: MPICH 4.3's mpi_f08 MPI_Neighbor_alltoallv sizes its arrays with
  ! MPI_Dist_graph_neighbors_count, which aborts on a Cartesian communicator. ---
  call MPI_Cart_create(MPI_COMM_WORLD, 1, [P], [P >= 3], .false., ring)
  call MPI_Cart_shift(ring, 0, 1, left, right)
  sc(1:2) = [1, 2]
  sd(1:2) = [0, 2]
  rc(1:2) = [2, 1]
  rd(1:2) = [3, 0]
  allocate (sbuf(4), rbuf(6), want(6), nr(2), nwant(2))
  call MPIX_Neighbor_alltoallv_init(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, ring, &
                                    MPI_INFO_NULL, reqs(1), ierr)
  call check(ierr == MPI_SUCCESS, "MPIX_Neighbor_alltoallv_init ierror")
  call MPIX_Neighbor_alltoall_init(sbuf, 1, MPI_INTEGER, nr, 1, MPI_INTEGER, ring, &
                                   MPI_INFO_NULL, reqs(2))
  do iter = 1, 3
    call fill(sbuf, 1)
    rbuf = -7
    want = -7
    nr = -7
    nwant = -7
    call poison(statuses(1))
    call poison(statuses(2))
    call MPIX_Startall(2, reqs)
    if (iter == 2) then
      call MPIX_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    else
      call MPIX_Waitall(2, reqs, statuses, ierr)
      call check_status(statuses(1), "MPIX_Waitall statuses(1)")
      call check_status(statuses(2), "MPIX_Waitall statuses(2)")
    end if
    call check(ierr == MPI_SUCCESS, "MPIX_Waitall ierror")
    ! from the left its block to the right (its sbuf(3:4)) into rbuf(4:5); from the right its
    ! block to the left (its sbuf(1)) into rbuf(1); alltoall: one integer each way
    if (left /= MPI_PROC_NULL) then
      want(4:5) = [value(left, 3, 1), value(left, 4, 1)]
      nwant(1) = value(left, 2, 1)
    end if
    if (right /= MPI_PROC_NULL) then
      want(1) = value(right, 1, 1)
      nwant(2) = value(right, 1, 1)
    end if
    call check(all(rbuf == want), "persistent neighbor alltoallv")
    call check(all(nr == nwant), "persistent neighbor alltoall")
    rbuf = -7
    nr = -7
    call MPIX_Neighbor_alltoallv(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, ring, ierr)
    call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking neighbor alltoallv")
    call MPIX_Neighbor_alltoall(sbuf, 1, MPI_INTEGER, nr, 1, MPI_INTEGER, ring)
    call check(all(nr == nwant), "blocking neighbor alltoall")
    rbuf = -7
    call MPIX_Ineighbor_alltoallv(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, ring, &
                                  nbreq, ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Ineighbor_alltoallv ierror")
    flag = .false.
    do while (.not. flag)
      call MPIX_Test(nbreq, flag)
    end do
    call check(nbreq == MPIX_REQUEST_NULL .and. all(rbuf == want), &
               "nonblocking neighbor alltoallv")
  end do
  call MPIX_Request_free(reqs(1))
  call MPIX_Request_free(reqs(2), ierr)
  call check(ierr == MPI_SUCCESS .and. reqs(2) == MPIX_REQUEST_NULL, "MPIX_Request_free")
  deallocate (sbuf, rbuf, want, nr, nwant)

  ! --- neighbor alltoallw on the same ring: to the left two integers with a hole between them
  ! (a vector type), to the right one integer; byte displacements. Checked against the values
  ! the neighbors sent (none from MPI_PROC_NULL); from 3 ranks also on a distributed graph of
  ! the same ring, and there against MPI_Neighbor_alltoallw as well (not on the Cartesian ring:
  ! MPICH's mpi_f08 MPI_Neighbor_alltoallw, 4.0 on, aborts there as above). ---
  call MPI_Type_vector(2, 1, 2, MPI_INTEGER, vec)
  call MPI_Type_commit(vec)
  isz = storage_size(n) / 8
  wsc = [1, 1]
  wst = [vec, MPI_INTEGER]
  wsd = [0, 4*isz]              ! sbuf(1) and sbuf(3); sbuf(5)
  wrc = [1, 2]
  wrt = [MPI_INTEGER, MPI_INTEGER]
  wrd = [5*isz, 1*isz]          ! from the left: rbuf(6); from the right: rbuf(2:3)
  wcomm(1) = ring
  nw = 1
  if (P >= 3) then
    call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, [left, right], MPI_UNWEIGHTED, 2, &
                                        [left, right], MPI_UNWEIGHTED, MPI_INFO_NULL, .false., &
                                        wcomm(2))
    nw = 2
  end if
  allocate (sbuf(6), rbuf(6), want(6))
  do k = 1, nw
    call MPIX_Neighbor_alltoallw_init(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, wcomm(k), &
                                      MPI_INFO_NULL, req, ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Neighbor_alltoallw_init ierror")
    do iter = 1, 3
      call fill(sbuf, 1)
      want = -7
      if (left /= MPI_PROC_NULL) want(6) = value(left, 5, 1)
      if (right /= MPI_PROC_NULL) want(2:3) = [value(right, 1, 1), value(right, 3, 1)]
      rbuf = -7
      call MPIX_Start(req)
      call MPIX_Wait(req)
      call check(all(rbuf == want), "persistent neighbor alltoallw")
      rbuf = -7
      call MPIX_Neighbor_alltoallw(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, wcomm(k), ierr)
      call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking neighbor alltoallw")
      rbuf = -7
      call MPIX_Ineighbor_alltoallw(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, wcomm(k), nbreq, &
                                    ierr)
      call check(ierr == MPI_SUCCESS, "MPIX_Ineighbor_alltoallw ierror")
      call MPIX_Wait(nbreq, ierror=ierr)
      call check(ierr == MPI_SUCCESS .and. nbreq == MPIX_REQUEST_NULL .and. all(rbuf == want), &
                 "nonblocking neighbor alltoallw")
      if (k == 2) then
        rbuf = -7
        call MPI_Neighbor_alltoallw(sbuf, wsc, wsd, wst, rbuf, wrc, wrd, wrt, wcomm(k))
        call check(all(rbuf == want), "MPI_Neighbor_alltoallw agrees with the reference")
      end if
    end do
    call MPIX_Request_free(req)
  end do
  if (nw == 2) call MPI_Comm_free(wcomm(2))
  call MPI_Type_free(vec)
  call MPI_Comm_free(ring)
  deallocate (sbuf, rbuf, want)

  ! --- queries and an error class ---
  call MPIX_Algorithm_get("alltoall", 0, aname, adesc, ierr)
  call check(ierr == MPI_SUCCESS .and. len_trim(aname) > 0, "MPIX_Algorithm_get")
  call MPIX_Comm_locality(MPI_COMM_WORLD, node, nnodes, lrank, lsize, ierr)
  call check(ierr == MPI_SUCCESS .and. nnodes >= 1 .and. lsize >= 1, "MPIX_Comm_locality")
  call MPIX_Comm_rank_locality(MPI_COMM_WORLD, rank, node2, lrank2, pkg, numa, ierr)
  call check(ierr == MPI_SUCCESS .and. node2 == node .and. lrank2 == lrank, &
             "MPIX_Comm_rank_locality")
  call MPIX_Comm_locality_split(MPI_COMM_WORLD, MPIX_LOCALITY_NODE, nodecomm, ierr)
  call MPI_Comm_size(nodecomm, n)
  call check(ierr == MPI_SUCCESS .and. n == lsize, "MPIX_Comm_locality_split")
  call MPI_Comm_free(nodecomm)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "no_such_algorithm", ierr)
  call check(ierr == MPI_ERR_INFO_VALUE, "MPIX_Comm_set_algorithm rejects an unknown algorithm")
  ! Every 2nd element: rejected on every rank before anything is sent.
  allocate (sbuf(2*P), rbuf(P))
  call MPIX_Alltoall(sbuf(1:2*P:2), 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_ERR_BUFFER, "a non-contiguous buffer is MPI_ERR_BUFFER")
  deallocate (sbuf, rbuf, sc, sd, rc, rd)
  iter = 0

  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', "PASS"
    else
      print '(a,i0,a)', "FAIL: ", total, " failed checks"
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  ! Values that change with the rank, the position and the iteration.
  subroutine fill(buf, stride)
    integer, intent(out) :: buf(:)
    integer, intent(in) :: stride
    integer :: x
    do x = 1, size(buf)
      buf(x) = value(rank, x, stride)
    end do
  end subroutine

  ! Element k of the alltoallw block from src to dst.
  integer function wvalue(src, dst, k)
    integer, intent(in) :: src, dst, k
    wvalue = src*100003 + dst*1009 + k*7 + iter*31
  end function

  ! What fill writes at position x of rank r's buffer.
  integer function value(r, x, stride)
    integer, intent(in) :: r, x, stride
    value = r*100003 + x*7 + iter*31 + stride
  end function

  ! A status that an empty one cannot be mistaken for.
  subroutine poison(st)
    type(MPI_Status), intent(inout) :: st
    st%MPI_SOURCE = 12345
    st%MPI_TAG = 12345
    st%MPI_ERROR = 12345
    call MPI_Status_set_elements(st, MPI_INTEGER, 99)
    call MPI_Status_set_cancelled(st, .true.)
  end subroutine

  ! The empty status of a completed collective request: count 0, not cancelled, no source.
  subroutine check_status(st, what)
    type(MPI_Status), intent(in) :: st
    character(len=*), intent(in) :: what
    integer :: cnt
    logical :: cancelled
    call MPI_Get_count(st, MPI_INTEGER, cnt)
    call MPI_Test_cancelled(st, cancelled)
    call check(st%MPI_SOURCE == MPI_ANY_SOURCE .and. st%MPI_TAG == MPI_ANY_TAG .and. &
               st%MPI_ERROR == MPI_SUCCESS .and. cnt == 0 .and. .not. cancelled, what)
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errors = errors + 1
      print '(a,i0,a,a,a,i0)', "rank ", rank, ": ", what, " failed, iteration ", iter
    end if
  end subroutine
end program test_module
