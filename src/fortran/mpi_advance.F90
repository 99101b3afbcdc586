! The Fortran interface of mpi-advance: `use mpi_advance` next to `use mpi_f08`.
!
! Every public C function but the large-count _c forms has a procedure of the same name (the
! _c forms are not bound yet: MPI-4's Fortran overloads them on INTEGER(MPI_COUNT_KIND), which
! Open MPI 4.1's mpi_f08 does not), with mpi_f08's handle types
! (type(MPI_Comm), type(MPI_Datatype), type(MPI_Info), type(MPI_Status)), a type(MPIX_Request),
! choice buffers as assumed-rank `type(*), dimension(..)` (contiguous: a non-contiguous buffer is
! MPI_ERR_BUFFER, since a persistent request keeps the address), MPI_IN_PLACE, and mpi_f08's
! optional `ierror`. Statuses are optional arguments: leave them out, or pass mpi_f08's
! MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE (recognised by address, never written). A status
! returned is empty, as in C: MPI_ANY_SOURCE, MPI_ANY_TAG, the request's error, count 0, not
! cancelled. Strings are Fortran character variables. The C side is mpia_fortran_glue.c.
module mpi_advance
  use, intrinsic :: iso_c_binding
  use mpi_f08
  implicit none
  private

  public :: MPIX_Request, MPIX_REQUEST_NULL, MPIX_MAX_ALGORITHM_STRING, MPIX_INFO_KEY_ALGORITHM
  public :: MPIX_LOCALITY_UNBOUND, MPIX_LOCALITY_NODE, MPIX_LOCALITY_CROSS
  public :: MPIX_Start, MPIX_Startall, MPIX_Wait, MPIX_Waitall, MPIX_Test, MPIX_Request_free
  public :: MPIX_Request_get_algorithm, MPIX_Algorithm_get, MPIX_Request_get_traffic
  public :: MPIX_Request_get_memory
  public :: MPIX_Request_get_trial
  public :: MPIX_Comm_locality, MPIX_Comm_rank_locality, MPIX_Comm_locality_split
  public :: MPIX_Comm_set_algorithm
  public :: operator(==), operator(/=)
  ! Topology objects (MPIX_Topo_create: see mpi_advance.h).
  public :: MPIX_Topo, MPIX_TOPO_NULL, MPIX_Topo_create, MPIX_Topo_free
  public :: MPIX_Neighbor_alltoallv_topo_init, MPIX_Neighbor_alltoallv_topo
  ! The collectives' forms (int counts), generated from src/bindings/calls.txt.
#include "module_public.inc"

  ! The C MPIX_Request (a pointer), by value.
  type, bind(C) :: MPIX_Request
    type(c_ptr) :: handle = c_null_ptr
  end type MPIX_Request
  type(MPIX_Request), parameter :: MPIX_REQUEST_NULL = MPIX_Request(c_null_ptr)

  ! The C MPIX_Topo (a pointer), by value.
  type, bind(C) :: MPIX_Topo
    type(c_ptr) :: handle = c_null_ptr
  end type MPIX_Topo
  type(MPIX_Topo), parameter :: MPIX_TOPO_NULL = MPIX_Topo(c_null_ptr)

  integer, parameter :: MPIX_MAX_ALGORITHM_STRING = 256
  integer, parameter :: MPIX_MAX_TRIAL_STRING = 1024
  character(len=*), parameter :: MPIX_INFO_KEY_ALGORITHM = "mpix_algorithm"
  character(len=*), parameter :: MPIX_INFO_KEY_AUTO = "mpix_auto"
  integer, parameter :: MPIX_LOCALITY_UNBOUND = -1
  integer, parameter :: MPIX_LOCALITY_NODE = 0, MPIX_LOCALITY_CROSS = 1

  interface operator(==)
    module procedure request_eq, topo_eq
  end interface
  interface operator(/=)
    module procedure request_ne, topo_ne
  end interface

  interface
    integer(c_int) function c_topo_create(comm, indeg, srcs, outdeg, dsts, info, topo) &
        bind(C, name="mpia_f_topo_create")
      import :: c_int, MPIX_Topo
      integer(c_int), value :: comm, indeg, outdeg, info
      integer(c_int) :: srcs(*), dsts(*)
      type(MPIX_Topo) :: topo
    end function
    integer(c_int) function c_neighbor_alltoallv_topo_init(sb, scs, sds, st, rb, rcs, rds, rt, &
        topo, info, req) bind(C, name="mpia_f_neighbor_alltoallv_topo_init")
      import :: c_int, MPIX_Request, MPIX_Topo
      type(*), dimension(..) :: sb, rb
      integer(c_int) :: scs(*), sds(*), rcs(*), rds(*)
      integer(c_int), value :: st, rt, info
      type(MPIX_Topo), value :: topo
      type(MPIX_Request) :: req
    end function
    integer(c_int) function c_neighbor_alltoallv_topo(sb, scs, sds, st, rb, rcs, rds, rt, topo) &
        bind(C, name="mpia_f_neighbor_alltoallv_topo")
      import :: c_int, MPIX_Topo
      type(*), dimension(..) :: sb, rb
      integer(c_int) :: scs(*), sds(*), rcs(*), rds(*)
      integer(c_int), value :: st, rt
      type(MPIX_Topo), value :: topo
    end function
  end interface

  logical, save :: registered = .false.

  interface
    subroutine c_register_in_place(in_place) bind(C, name="mpia_f_register_in_place")
      type(*), dimension(..) :: in_place
    end subroutine
    type(c_ptr) function c_address(x) bind(C, name="mpia_f_address")
      import :: c_ptr
      type(*), dimension(..) :: x
    end function
    ! The C side of the collectives' forms (mpia_fortran_glue.c). mpi_f08's type(MPI_Datatype)
    ! is a bind(C) type of one INTEGER: an array of them is an array of MPI_Fint.
#include "module_interfaces.inc"
    integer(c_int) function c_start(req) bind(C, name="mpia_f_start")
      import :: c_int, MPIX_Request
      type(MPIX_Request) :: req
    end function
    integer(c_int) function c_startall(n, reqs) bind(C, name="mpia_f_startall")
      import :: c_int, MPIX_Request
      integer(c_int), value :: n
      type(MPIX_Request) :: reqs(*)
    end function
    integer(c_int) function c_wait(req, fstatus) bind(C, name="mpia_f_wait")
      import :: c_int, c_ptr, MPIX_Request
      type(MPIX_Request) :: req
      type(c_ptr), value :: fstatus
    end function
    integer(c_int) function c_test(req, flag, fstatus) bind(C, name="mpia_f_test")
      import :: c_int, c_ptr, MPIX_Request
      type(MPIX_Request) :: req
      integer(c_int) :: flag
      type(c_ptr), value :: fstatus
    end function
    integer(c_int) function c_waitall(n, reqs, fstatuses) bind(C, name="mpia_f_waitall")
      import :: c_int, c_ptr, MPIX_Request
      integer(c_int), value :: n
      type(MPIX_Request) :: reqs(*)
      type(c_ptr), value :: fstatuses
    end function
    integer(c_int) function c_request_text(req, trial, text, len, resultlen) &
        bind(C, name="mpia_f_request_text")
      import :: c_int, c_char, MPIX_Request
      type(MPIX_Request), value :: req
      integer(c_int), value :: trial, len
      character(kind=c_char) :: text(*)
      integer(c_int) :: resultlen
    end function
    integer(c_int) function c_algorithm_get(coll, index, name, name_len, desc, desc_len) &
        bind(C, name="mpia_f_algorithm_get")
      import :: c_int, c_char
      character(kind=c_char) :: coll(*), name(*), desc(*)
      integer(c_int), value :: index, name_len, desc_len
    end function
    integer(c_int) function c_comm_locality(comm, node, nnodes, local_rank, local_size) &
        bind(C, name="mpia_f_comm_locality")
      import :: c_int
      integer(c_int), value :: comm
      integer(c_int) :: node, nnodes, local_rank, local_size
    end function
    integer(c_int) function c_comm_rank_locality(comm, rank, node, local_rank, package, numa) &
        bind(C, name="mpia_f_comm_rank_locality")
      import :: c_int
      integer(c_int), value :: comm, rank
      integer(c_int) :: node, local_rank, package, numa
    end function
    integer(c_int) function c_comm_locality_split(comm, kind, newcomm) &
        bind(C, name="mpia_f_comm_locality_split")
      import :: c_int
      integer(c_int), value :: comm, kind
      integer(c_int) :: newcomm
    end function
    integer(c_int) function c_comm_set_algorithm(comm, coll, sel) &
        bind(C, name="mpia_f_comm_set_algorithm")
      import :: c_int, c_char
      integer(c_int), value :: comm
      character(kind=c_char) :: coll(*), sel(*)
    end function
  end interface

contains

  ! Two C handles (MPIX_Request, MPIX_Topo) are equal when they hold the same pointer, or none.
  logical function same_handle(a, b)
    type(c_ptr), intent(in) :: a, b
    same_handle = c_associated(a, b) .or. (.not. c_associated(a) .and. .not. c_associated(b))
  end function

  ! The C side recognises MPI_IN_PLACE by the address of mpi_f08's MPI_IN_PLACE.
  subroutine register()
    if (.not. registered) then
      call c_register_in_place(MPI_IN_PLACE)
      registered = .true.
    end if
  end subroutine

  ! Whether a status argument is to be written: present and not mpi_f08's MPI_STATUS_IGNORE
  ! (MPI_STATUSES_IGNORE for an array, given by its first element).
  logical function wanted(status, ignore)
    type(MPI_Status), optional :: status
    type(MPI_Status) :: ignore(..)
    wanted = .false.
    if (present(status)) wanted = .not. c_associated(c_address(status), c_address(ignore))
  end function

  ! An empty status (the C side's MPI_SOURCE, MPI_TAG, MPI_ERROR; count 0, not cancelled),
  ! through mpi_f08 itself: the hidden fields' layout differs between MPIs.
  subroutine to_status(f, status)
    integer(c_int), intent(in) :: f(3)
    type(MPI_Status) :: status
    call MPI_Status_set_elements(status, MPI_BYTE, 0)
    call MPI_Status_set_cancelled(status, .false.)
    status%MPI_SOURCE = f(1)
    status%MPI_TAG = f(2)
    status%MPI_ERROR = f(3)
  end subroutine

  subroutine set(ierror, rc)
    integer, optional, intent(out) :: ierror
    integer(c_int), intent(in) :: rc
    if (present(ierror)) ierror = int(rc)
  end subroutine

  ! A request's text (trial: MPIX_Request_get_trial's, else MPIX_Request_get_algorithm's) as s,
  ! blank-padded; resultlen its length.
  subroutine request_text(request, trial, s, resultlen, ierror)
    type(MPIX_Request), intent(in) :: request
    logical, intent(in) :: trial
    character(len=*), intent(out) :: s
    integer, intent(out) :: resultlen
    integer, optional, intent(out) :: ierror
    character(kind=c_char) :: buf(MPIX_MAX_TRIAL_STRING)  ! the longer of the two
    integer(c_int) :: rc, n
    integer :: i
    n = 0
    rc = c_request_text(request, merge(1_c_int, 0_c_int, trial), buf, int(size(buf), c_int), n)
    s = ""
    if (rc == MPI_SUCCESS) then
      do i = 1, min(int(n), len(s))
        s(i:i) = buf(i)
      end do
    end if
    resultlen = int(n)
    call set(ierror, rc)
  end subroutine

  function cstr(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char) :: c(len_trim(s) + 1)
    integer :: i
    do i = 1, len_trim(s)
      c(i) = s(i:i)
    end do
    c(len_trim(s) + 1) = c_null_char
  end function

  ! The collectives' forms: MPIX_Alltoall, MPIX_Ialltoall, MPIX_Alltoall_init, ... with
  ! mpi_f08's argument types. A nonblocking call's MPIX_Wait or MPIX_Test completes and frees its
  ! request; a w call's arrays are read during the call.
#include "module_procedures.inc"

  subroutine MPIX_Start(request, ierror)
    type(MPIX_Request), intent(inout) :: request
    integer, optional, intent(out) :: ierror
    call set(ierror, c_start(request))
  end subroutine

  subroutine MPIX_Startall(count, requests, ierror)
    integer, intent(in) :: count
    type(MPIX_Request), intent(inout) :: requests(count)
    integer, optional, intent(out) :: ierror
    call set(ierror, c_startall(count, requests))
  end subroutine

  subroutine MPIX_Wait(request, status, ierror)
    type(MPIX_Request), intent(inout) :: request
    type(MPI_Status), optional :: status
    integer, optional, intent(out) :: ierror
    integer(c_int), target :: f(3)
    integer(c_int) :: rc
    if (wanted(status, MPI_STATUS_IGNORE)) then
      rc = c_wait(request, c_loc(f))
      call to_status(f, status)
    else
      rc = c_wait(request, c_null_ptr)
    end if
    call set(ierror, rc)
  end subroutine

  subroutine MPIX_Test(request, flag, status, ierror)
    type(MPIX_Request), intent(inout) :: request
    logical, intent(out) :: flag
    type(MPI_Status), optional :: status
    integer, optional, intent(out) :: ierror
    integer(c_int), target :: f(3)
    integer(c_int) :: rc, cflag
    cflag = 0
    if (wanted(status, MPI_STATUS_IGNORE)) then
      rc = c_test(request, cflag, c_loc(f))
      if (cflag /= 0) call to_status(f, status)
    else
      rc = c_test(request, cflag, c_null_ptr)
    end if
    flag = cflag /= 0
    call set(ierror, rc)
  end subroutine

  subroutine MPIX_Waitall(count, requests, statuses, ierror)
    integer, intent(in) :: count
    type(MPIX_Request), intent(inout) :: requests(count)
    type(MPI_Status), optional :: statuses(*)
    integer, optional, intent(out) :: ierror
    integer(c_int), allocatable, target :: f(:, :)
    integer(c_int) :: rc
    integer :: i
    logical :: want
    want = .false.
    if (present(statuses) .and. count > 0) want = wanted(statuses(1), MPI_STATUSES_IGNORE)
    if (want) then
      allocate (f(3, count))
      rc = c_waitall(count, requests, c_loc(f))
      do i = 1, count
        call to_status(f(:, i), statuses(i))
      end do
    else
      rc = c_waitall(count, requests, c_null_ptr)
    end if
    call set(ierror, rc)
  end subroutine




  subroutine MPIX_Algorithm_get(collective, index, name, description, ierror)
    character(len=*), intent(in) :: collective
    integer, intent(in) :: index
    character(len=*), intent(out) :: name, description
    integer, optional, intent(out) :: ierror
    character(kind=c_char) :: n(len(name)), d(len(description))
    integer :: i
    integer(c_int) :: rc
    rc = c_algorithm_get(cstr(collective), index, n, len(name), d, len(description))
    name = ""
    description = ""
    if (rc == MPI_SUCCESS) then
      do i = 1, len(name)
        name(i:i) = n(i)
      end do
      do i = 1, len(description)
        description(i:i) = d(i)
      end do
    end if
    call set(ierror, rc)
  end subroutine



  subroutine MPIX_Comm_locality(comm, node, nnodes, local_rank, local_size, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(out) :: node, nnodes, local_rank, local_size
    integer, optional, intent(out) :: ierror
    call set(ierror, c_comm_locality(comm%MPI_VAL, node, nnodes, local_rank, local_size))
  end subroutine

  subroutine MPIX_Comm_rank_locality(comm, rank, node, local_rank, package, numa, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: rank
    integer, intent(out) :: node, local_rank, package, numa
    integer, optional, intent(out) :: ierror
    call set(ierror, c_comm_rank_locality(comm%MPI_VAL, rank, node, local_rank, package, numa))
  end subroutine

  subroutine MPIX_Comm_locality_split(comm, kind, newcomm, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: kind
    type(MPI_Comm), intent(out) :: newcomm
    integer, optional, intent(out) :: ierror
    integer(c_int) :: f
    f = 0
    call set(ierror, c_comm_locality_split(comm%MPI_VAL, kind, f))
    newcomm%MPI_VAL = f
  end subroutine

  subroutine MPIX_Comm_set_algorithm(comm, collective, selection, ierror)
    type(MPI_Comm), intent(in) :: comm
    character(len=*), intent(in) :: collective, selection
    integer, optional, intent(out) :: ierror
    call set(ierror, c_comm_set_algorithm(comm%MPI_VAL, cstr(collective), cstr(selection)))
  end subroutine


  subroutine MPIX_Topo_create(comm, indegree, sources, outdegree, destinations, info, topo, ierror)
    type(MPI_Comm), intent(in) :: comm
    integer, intent(in) :: indegree, outdegree, sources(*), destinations(*)
    type(MPI_Info), intent(in) :: info
    type(MPIX_Topo), intent(out) :: topo
    integer, optional, intent(out) :: ierror
    call set(ierror, c_topo_create(comm%MPI_VAL, indegree, sources, outdegree, destinations, &
                                   info%MPI_VAL, topo))
  end subroutine


  subroutine MPIX_Neighbor_alltoallv_topo_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, &
                                               recvcounts, rdispls, recvtype, topo, info, &
                                               request, ierror)
    type(*), dimension(..), intent(in), asynchronous :: sendbuf
    type(*), dimension(..), asynchronous :: recvbuf
    integer, intent(in) :: sendcounts(*), sdispls(*), recvcounts(*), rdispls(*)
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(MPIX_Topo), intent(in) :: topo
    type(MPI_Info), intent(in) :: info
    type(MPIX_Request), intent(out) :: request
    integer, optional, intent(out) :: ierror
    call register()
    call set(ierror, c_neighbor_alltoallv_topo_init(sendbuf, sendcounts, sdispls, &
                                                    sendtype%MPI_VAL, recvbuf, recvcounts, &
                                                    rdispls, recvtype%MPI_VAL, topo, &
                                                    info%MPI_VAL, request))
  end subroutine

  subroutine MPIX_Neighbor_alltoallv_topo(sendbuf, sendcounts, sdispls, sendtype, recvbuf, &
                                          recvcounts, rdispls, recvtype, topo, ierror)
    type(*), dimension(..), intent(in) :: sendbuf
    type(*), dimension(..) :: recvbuf
    integer, intent(in) :: sendcounts(*), sdispls(*), recvcounts(*), rdispls(*)
    type(MPI_Datatype), intent(in) :: sendtype, recvtype
    type(MPIX_Topo), intent(in) :: topo
    integer, optional, intent(out) :: ierror
    call register()
    call set(ierror, c_neighbor_alltoallv_topo(sendbuf, sendcounts, sdispls, sendtype%MPI_VAL, &
                                               recvbuf, recvcounts, rdispls, recvtype%MPI_VAL, &
                                               topo))
  end subroutine

end module mpi_advance
