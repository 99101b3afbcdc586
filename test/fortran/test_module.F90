! The Fortran module mpi_advance against mpi_f08's own collectives, on every rank, element by
! element: persistent MPIX_Alltoall_init (and MPI_IN_PLACE), MPIX_Alltoallv_init (uneven counts
! with zeros, gaps), MPIX_Neighbor_alltoallv_init on a periodic ring, each started 3 times with
! changed data; blocking MPIX_Alltoallv; MPIX_Waitall/Test with statuses; the optional ierror
! present and absent; the query functions. All ranks fail if one does.
program test_module
  use mpi_f08
  use mpi_advance
  implicit none
  integer :: rank, P, errors, total, iter, i, j, k, ierr, n
  integer, parameter :: B = 3
  integer, allocatable, asynchronous :: sbuf(:), rbuf(:)
  integer, allocatable :: want(:), sc(:), sd(:), rc(:), rd(:)
  type(MPIX_Request) :: req, reqs(2)
  type(MPI_Status) :: status, statuses(2)
  type(MPI_Comm) :: ring
  character(len=MPIX_MAX_ALGORITHM_STRING) :: name
  character(len=64) :: aname
  character(len=512) :: adesc
  integer(MPI_COUNT_KIND) :: msgs, bytes, imsgs, ibytes
  logical :: flag
  integer :: node, nnodes, lrank, lsize

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, P)
  errors = 0

  ! --- persistent alltoall, then in place ---
  allocate (sbuf(B*P), rbuf(B*P), want(B*P))
  call MPIX_Alltoall_init(sbuf, B, MPI_INTEGER, rbuf, B, MPI_INTEGER, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, req, ierr)
  call check(ierr == MPI_SUCCESS, "MPIX_Alltoall_init ierror")
  do iter = 1, 3
    call fill(sbuf, B)
    rbuf = -1
    call MPIX_Start(req)
    call MPIX_Wait(req, status, ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Wait ierror")
    call MPI_Alltoall(sbuf, B, MPI_INTEGER, want, B, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(rbuf == want), "persistent alltoall")
  end do
  call MPIX_Request_get_algorithm(req, name, n)
  call check(n > 0 .and. len_trim(name) == n, "MPIX_Request_get_algorithm")
  call MPIX_Request_get_traffic(req, msgs, bytes, imsgs, ibytes)
  call check(msgs >= 0 .and. bytes >= 0, "MPIX_Request_get_traffic")
  call MPIX_Request_free(req)
  call check(req == MPIX_REQUEST_NULL, "MPIX_Request_free sets MPIX_REQUEST_NULL")
  call MPIX_Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, B, MPI_INTEGER, &
                          MPI_COMM_WORLD, MPI_INFO_NULL, req)
  do iter = 1, 3
    call fill(rbuf, B)
    call MPI_Alltoall(rbuf, B, MPI_INTEGER, want, B, MPI_INTEGER, MPI_COMM_WORLD)
    call MPIX_Start(req, ierr)
    call MPIX_Wait(req)
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
    do while (.not. flag)
      call MPIX_Test(reqs(1), flag, status)
    end do
    call MPI_Alltoallv(sbuf, sc, sd, MPI_INTEGER, want, rc, rd, MPI_INTEGER, MPI_COMM_WORLD)
    call check(all(rbuf == want), "persistent alltoallv")
    rbuf = -7
    call MPIX_Alltoallv(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
    call check(ierr == MPI_SUCCESS .and. all(rbuf == want), "blocking alltoallv")
  end do
  call MPIX_Request_free(reqs(1))
  deallocate (sbuf, rbuf, want)

  ! --- persistent neighbor alltoallv on a ring: 1 to the left, 2 to the right. Periodic from 3
  ! ranks: on periodic dimensions of size 1 and 2 both MPIs' own neighbor collectives mix up the
  ! directions (README: Neighbor alltoall), so they cannot be the reference there. ---
  call MPI_Cart_create(MPI_COMM_WORLD, 1, [P], [P >= 3], .false., ring)
  sc(1:2) = [1, 2]
  sd(1:2) = [0, 2]
  rc(1:2) = [2, 1]
  rd(1:2) = [3, 0]
  allocate (sbuf(4), rbuf(6), want(6))
  call MPIX_Neighbor_alltoallv_init(sbuf, sc, sd, MPI_INTEGER, rbuf, rc, rd, MPI_INTEGER, ring, &
                                    MPI_INFO_NULL, reqs(1), ierr)
  call MPIX_Neighbor_alltoall_init(sbuf, 1, MPI_INTEGER, want, 1, MPI_INTEGER, ring, &
                                   MPI_INFO_NULL, reqs(2), ierr)
  call MPIX_Request_free(reqs(2))
  do iter = 1, 3
    call fill(sbuf, 1)
    rbuf = -7
    want = -7
    call MPIX_Start(reqs(1))
    call MPIX_Waitall(1, reqs(1:1), statuses(1:1), ierr)
    call check(ierr == MPI_SUCCESS, "MPIX_Waitall ierror")
    call MPI_Neighbor_alltoallv(sbuf, sc(1:2), sd(1:2), MPI_INTEGER, want, rc(1:2), rd(1:2), &
                                MPI_INTEGER, ring)
    call check(all(rbuf == want), "persistent neighbor alltoallv")
  end do
  call MPIX_Request_free(reqs(1))
  call MPI_Comm_free(ring)

  ! --- queries and an error class ---
  call MPIX_Algorithm_get("alltoall", 0, aname, adesc, ierr)
  call check(ierr == MPI_SUCCESS .and. len_trim(aname) > 0, "MPIX_Algorithm_get")
  call MPIX_Comm_locality(MPI_COMM_WORLD, node, nnodes, lrank, lsize, ierr)
  call check(ierr == MPI_SUCCESS .and. nnodes >= 1 .and. lsize >= 1, "MPIX_Comm_locality")
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPIX_Comm_set_algorithm(MPI_COMM_WORLD, "alltoall", "no_such_algorithm", ierr)
  call check(ierr /= MPI_SUCCESS, "MPIX_Comm_set_algorithm rejects an unknown algorithm")

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
      buf(x) = rank*100003 + x*7 + iter*31 + stride
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
end program test_module
