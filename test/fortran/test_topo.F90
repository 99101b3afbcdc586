! MPIX_Topo from Fortran (issue 20): a multigraph (the edge to the next rank twice, a self loop)
! through a topology object -- persistent (the object freed while the request is active) and
! blocking -- checked element by element against a formula and against mpi_f08's own
! MPI_Neighbor_alltoallv on MPI_Dist_graph_create_adjacent's communicator; a rank out of range
! is MPI_ERR_ARG. All ranks fail if one does.
program test_topo
  use mpi_f08
  use mpi_advance
  implicit none
  integer :: rank, P, errors, total, iter, k, j, ierr
  integer :: srcs(3), dsts(3), sc(3), sd(3), rc(3), rd(3), blk(3)
  integer, allocatable, asynchronous :: sbuf(:), rbuf(:)
  integer, allocatable :: want(:), sys(:)
  type(MPIX_Topo) :: topo
  type(MPIX_Request) :: req
  type(MPI_Comm) :: graph
  type(MPI_Info) :: info
  character(len=MPIX_MAX_ALGORITHM_STRING) :: name

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, P)
  errors = 0
  iter = 0
  ! Destinations: next, next, self; sources: self, previous, previous (edges paired in order).
  dsts = [modulo(rank + 1, P), modulo(rank + 1, P), rank]
  srcs = [rank, modulo(rank - 1, P), modulo(rank - 1, P)]
  sc = [1, 2, 3]        ! block k of every rank holds k elements
  sd = [5, 0, 2]
  ! Receive block k: the sender's block that names this rank as often before (MPI's pairing of
  ! duplicate edges); at P >= 2 self's 3rd block, then the previous rank's 1st and 2nd.
  do k = 1, 3
    blk(k) = paired(srcs(k), count(srcs(1:k) == srcs(k)))
    rc(k) = sc(blk(k))
  end do
  rd = [1, rc(1) + 2, rc(1) + rc(2) + 3]  ! a gap before every block
  allocate (sbuf(8), rbuf(9), want(9), sys(9))
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, srcs, MPI_UNWEIGHTED, 3, dsts, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph)
  call MPIX_Topo_create(MPI_COMM_WORLD, 3, srcs, 3, dsts, MPI_INFO_NULL, topo, ierr)
  call check(ierr == MPI_SUCCESS .and. topo /= MPIX_TOPO_NULL, "MPIX_Topo_create")
  call MPI_Info_create(info)
  call MPI_Info_set(info, MPIX_INFO_KEY_ALGORITHM, "locality")
  call MPIX_Neighbor_alltoallv_topo_init(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, &
                                         topo, info, req, ierr)
  call MPI_Info_free(info)
  call check(ierr == MPI_SUCCESS, "MPIX_Neighbor_alltoallv_topo_init")
  call MPIX_Request_get_algorithm(req, name, k)
  call check(name(1:8) == "locality", "the request's algorithm")
  do iter = 1, 3
    call fill(rank, iter)
    rbuf = -7
    call MPIX_Start(req)
    if (iter == 1) then
      call MPIX_Topo_free(topo, ierr)  ! the request keeps what it uses
      call check(ierr == MPI_SUCCESS .and. topo == MPIX_TOPO_NULL, "MPIX_Topo_free")
    end if
    call MPIX_Wait(req)
    call expected(iter)
    call check(all(rbuf == want), "persistent through MPIX_Topo")
    sys = -7
    call MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_INTEGER, sys, rc, rd, MPI_INTEGER, graph)
    ! MPI's own pairs the duplicate edges as MPI-4.1 says in Open MPI and MPICH 4.0, in reverse
    ! in MPICH 4.3.2: compared where it agrees with the formula (want, the reference).
    if (all(sys == want)) then
      call check(all(rbuf == sys), "the same as MPI_Neighbor_alltoallv")
    else if (iter == 1 .and. rank == 0) then
      print '(a)', "test_topo: the MPI library pairs duplicate edges otherwise: not compared"
    end if
  end do
  call MPIX_Request_free(req)
  call MPIX_Topo_create(MPI_COMM_WORLD, 3, srcs, 3, dsts, MPI_INFO_NULL, topo)
  call fill(rank, 9)
  rbuf = -7
  call MPIX_Neighbor_alltoallv_topo(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, topo, ierr)
  iter = 9
  call expected(9)
  call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking through MPIX_Topo")
  call MPIX_Topo_free(topo)
  ! A rank out of range on the last rank: MPI_ERR_ARG everywhere, no object.
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  if (rank == P - 1) dsts(1) = P
  call MPIX_Topo_create(MPI_COMM_WORLD, 3, srcs, 3, dsts, MPI_INFO_NULL, topo, ierr)
  call check(ierr == MPI_ERR_ARG .and. topo == MPIX_TOPO_NULL, "a rank out of range")
  call MPI_Comm_free(graph)
  deallocate (sbuf, rbuf, want, sys)

  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a,i0,a)', "test_topo: passed on ", P, " ranks"
    else
      print '(a,i0,a)', "test_topo: FAILED (", total, " errors)"
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) error stop 1

contains

  integer function val(src, blk, e, it)
    integer, intent(in) :: src, blk, e, it
    val = ((src * 7 + blk) * 13 + e) * 17 + it
  end function

  subroutine fill(me, it)
    integer, intent(in) :: me, it
    sbuf = -5
    do k = 1, 3
      do j = 1, sc(k)
        sbuf(sd(k) + j) = val(me, k, j, it)
      end do
    end do
  end subroutine

  ! The block of rank s that is its occ-th edge to this rank.
  integer function paired(s, occ)
    integer, intent(in) :: s, occ
    integer :: d(3), seen
    d = [modulo(s + 1, P), modulo(s + 1, P), s]
    seen = 0
    paired = 0
    do j = 1, 3
      if (d(j) == rank) seen = seen + 1
      if (seen == occ .and. paired == 0) paired = j
    end do
  end function

  subroutine expected(it)
    integer, intent(in) :: it
    want = -7
    do k = 1, 3
      do j = 1, rc(k)
        want(rd(k) + j) = val(srcs(k), blk(k), j, it)
      end do
    end do
  end subroutine

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      errors = errors + 1
      print '(a,i0,a,a,a,i0)', "rank ", rank, ": ", what, " failed, iteration ", iter
    end if
  end subroutine
end program test_topo
