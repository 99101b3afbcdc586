! A downstream Fortran program built against the *installed* module mpi_advance: a persistent
! alltoall checked against mpi_f08's MPI_Alltoall on every rank.
program consumer
  use mpi_f08
  use mpi_advance
  implicit none
  integer, parameter :: B = 3
  integer :: rank, size, errors, total, i
  integer, allocatable, asynchronous :: s(:), r(:)
  integer, allocatable :: want(:)
  type(MPIX_Request) :: req
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
  integer :: vlen

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  allocate (s(B*size), r(B*size), want(B*size))
  s = [(rank*10000 + i, i = 1, B*size)]
  errors = 0
  call MPIX_Alltoall_init(s, B, MPI_INTEGER, r, B, MPI_INTEGER, MPI_COMM_WORLD, MPI_INFO_NULL, req)
  call MPIX_Start(req)
  call MPIX_Wait(req)
  call MPIX_Request_free(req)
  call MPI_Alltoall(s, B, MPI_INTEGER, want, B, MPI_INTEGER, MPI_COMM_WORLD)
  if (any(r /= want)) errors = 1
  call MPI_Allreduce(errors, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Get_library_version(version, vlen)
  if (rank == 0) then
    print '(a,i0,a,a)', "Fortran consumer: ", size, " ranks, MPI: ", version(1:min(vlen, 60))
    if (total == 0) then
      print '(a)', "Fortran consumer: PASS"
    else
      print '(a)', "Fortran consumer: FAIL"
    end if
  end if
  call MPI_Finalize()
  if (total /= 0) error stop 1
end program consumer
