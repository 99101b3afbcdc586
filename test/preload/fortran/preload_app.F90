! An unmodified Fortran MPI program (it knows nothing of mpi-advance), built twice: with
! `use mpi` and, with USE_MPI_F08 defined, with `use mpi_f08`. run_fortran.sh runs it under
! libmpi_advance_preload.so and checks the preload's MPIX_REPORT lines.
!
! Five rounds, with data that changes every round, of
!   MPI_Alltoall            3 INTEGERs per block, then again with MPI_IN_PLACE
!   MPI_Alltoallv           uneven counts (zeros included), blocks in reverse order with gaps,
!                           then again with MPI_IN_PLACE (symmetric counts)
!   MPI_Alltoallw           the v layout in bytes, each block MPI_INTEGER or (by parity)
!                           integers each followed by a hole (a resized integer of extent 2)
!   MPI_Neighbor_alltoall   on a 2-D Cartesian topology, periodic in its first dimension only
!   MPI_Neighbor_alltoallv  (so neighbors may be MPI_PROC_NULL, or the same rank twice; not with
!                           MPICH 4.3's mpi_f08, see test_neighbor)
!   MPI_Neighbor_alltoallw  (the v layout, a datatype per block, byte displacements; not with
!                           MPICH's mpi_f08, see test_neighbor)
! Every element of every receive buffer is checked, gaps and blocks from MPI_PROC_NULL
! included, against a formula of (source, destination, index, round); all ranks fail if one
! does. With mpi_f08 some calls leave out the optional ierror.
program preload_app
#ifdef USE_MPI_F08
  use mpi_f08
#else
  use mpi
#endif
  use, intrinsic :: iso_fortran_env, only : error_unit, output_unit
  implicit none
  integer, parameter :: NROUNDS = 5, SENTINEL = -7
  integer :: rank, nprocs, ierr, errors, total
#ifdef USE_MPI_F08
  type(MPI_Comm) :: cart
#else
  integer :: cart
#endif

  errors = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  call test_alltoall()
  call test_alltoallv()
  call test_alltoallw()
  call test_neighbor()

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

  subroutine check_ierr(what)
    character(len=*), intent(in) :: what
    if (ierr /= MPI_SUCCESS) call expect(ierr, MPI_SUCCESS, what // ' ierror', -1, -1)
  end subroutine check_ierr

  subroutine test_alltoall()
    integer, parameter :: n = 3
    integer, allocatable :: s(:), r(:)
    integer :: round, i, k
    allocate (s(0:n * nprocs - 1), r(0:n * nprocs - 1))
    do round = 0, NROUNDS - 1
      do i = 0, nprocs - 1
        do k = 0, n - 1
          s(i * n + k) = val(rank, i, k, round)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Alltoall(s, n, MPI_INTEGER, r, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
      call check_ierr('alltoall')
      do i = 0, nprocs - 1
        do k = 0, n - 1
          call expect(r(i * n + k), val(i, rank, k, round), 'alltoall', round, i * n + k)
        end do
      end do
      ! In place: the blocks to send are in r (another round's values).
      do i = 0, nprocs - 1
        do k = 0, n - 1
          r(i * n + k) = val(rank, i, k, round + NROUNDS)
        end do
      end do
#ifdef USE_MPI_F08
      call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INTEGER, MPI_COMM_WORLD)
#else
      ierr = -1
      call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INTEGER, MPI_COMM_WORLD, &
                        ierr)
      call check_ierr('alltoall in place')
#endif
      do i = 0, nprocs - 1
        do k = 0, n - 1
          call expect(r(i * n + k), val(i, rank, k, round + NROUNDS), 'alltoall in place', &
                      round, i * n + k)
        end do
      end do
    end do
    deallocate (s, r)
  end subroutine test_alltoall

  ! Elements from src to dst in round r: uneven, zero for some pairs.
  pure integer function vcount(src, dst, r)
    integer, intent(in) :: src, dst, r
    vcount = mod(src + 2 * dst + r, 4)
  end function vcount

  ! In place needs what i sends j to be what j expects from i: symmetric counts.
  pure integer function scount(a, b, r)
    integer, intent(in) :: a, b, r
    scount = mod(a + b + r, 3)
  end function scount

  ! Displacements of blocks of the given counts, in reverse order of peers or not, gap
  ! elements between them; returns the extent.
  integer function layout(counts, displs, m, reversed, gap)
    integer, intent(in) :: counts(0:), m, gap
    integer, intent(out) :: displs(0:)
    logical, intent(in) :: reversed
    integer :: x, j
    layout = 0
    do x = 0, m - 1
      j = x
      if (reversed) j = m - 1 - x
      displs(j) = layout
      layout = layout + counts(j) + gap
    end do
  end function layout

  ! Checks the receive buffer r: block i (counts(i) at displs(i)) holds want(i, k) (from the
  ! source of block i), every other element SENTINEL.
  subroutine check_blocks(r, counts, displs, m, sources, kinds, round, stamp, what)
    integer, intent(in) :: r(0:), counts(0:), displs(0:), m, sources(0:), kinds(0:), round, stamp
    character(len=*), intent(in) :: what
    logical :: covered(0:size(r) - 1)
    integer :: i, k
    covered = .false.
    do i = 0, m - 1
      if (sources(i) == MPI_PROC_NULL) cycle
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

  subroutine test_alltoallv()
    integer, allocatable :: s(:), r(:), sc(:), sd(:), rc(:), rd(:), peers(:), mine(:)
    integer :: round, i, k, extent, cap
    cap = 4 * nprocs + 2 * nprocs + 1
    allocate (s(0:cap - 1), r(0:cap - 1), sc(0:nprocs - 1), sd(0:nprocs - 1), &
              rc(0:nprocs - 1), rd(0:nprocs - 1), peers(0:nprocs - 1), mine(0:nprocs - 1))
    do i = 0, nprocs - 1
      peers(i) = i
    end do
    mine = rank
    do round = 0, NROUNDS - 1
      do i = 0, nprocs - 1
        sc(i) = vcount(rank, i, round)
        rc(i) = vcount(i, rank, round)
      end do
      extent = layout(sc, sd, nprocs, .true., 1)
      extent = layout(rc, rd, nprocs, .false., 2)
      s = SENTINEL
      do i = 0, nprocs - 1
        do k = 0, sc(i) - 1
          s(sd(i) + k) = val(rank, i, k, round)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Alltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, MPI_COMM_WORLD, ierr)
      call check_ierr('alltoallv')
      call check_blocks(r, rc, rd, nprocs, peers, mine, round, round, 'alltoallv')

      ! In place, reversed blocks, gap 1.
      do i = 0, nprocs - 1
        rc(i) = scount(rank, i, round)
      end do
      extent = layout(rc, rd, nprocs, .true., 1)
      r = SENTINEL
      do i = 0, nprocs - 1
        do k = 0, rc(i) - 1
          r(rd(i) + k) = val(rank, i, k, round + NROUNDS)
        end do
      end do
#ifdef USE_MPI_F08
      call MPI_Alltoallv(MPI_IN_PLACE, rc, rd, MPI_DATATYPE_NULL, r, rc, rd, MPI_INTEGER, &
                         MPI_COMM_WORLD)
#else
      ierr = -1
      call MPI_Alltoallv(MPI_IN_PLACE, rc, rd, MPI_DATATYPE_NULL, r, rc, rd, MPI_INTEGER, &
                         MPI_COMM_WORLD, ierr)
      call check_ierr('alltoallv in place')
#endif
      call check_blocks(r, rc, rd, nprocs, peers, mine, round, round + NROUNDS, &
                        'alltoallv in place')
    end do
    deallocate (s, r, sc, sd, rc, rd, peers, mine)
  end subroutine test_alltoallv

  ! MPI_Alltoallw: vcount's counts, blocks in reverse order with a gap of one integer, block j
  ! of MPI_INTEGER or of the holed type (by parity of sender and peer: the two sides differ).
  subroutine test_alltoallw()
    integer, allocatable :: s(:), r(:), sc(:), sd(:), rc(:), rd(:), ss(:), rs(:)
#ifdef USE_MPI_F08
    type(MPI_Datatype), allocatable :: st(:), rt(:)
    type(MPI_Datatype) :: hole
#else
    integer, allocatable :: st(:), rt(:)
    integer :: hole
#endif
    integer :: round, i, k, isz, ns, nr
    logical, allocatable :: covered(:)
    call MPI_Type_size(MPI_INTEGER, isz, ierr)
    call MPI_Type_create_resized(MPI_INTEGER, 0_MPI_ADDRESS_KIND, int(2 * isz, MPI_ADDRESS_KIND), &
                                 hole, ierr)
    call MPI_Type_commit(hole, ierr)
    allocate (sc(0:nprocs - 1), sd(0:nprocs - 1), rc(0:nprocs - 1), rd(0:nprocs - 1), &
              ss(0:nprocs - 1), rs(0:nprocs - 1), st(0:nprocs - 1), rt(0:nprocs - 1))
    do round = 0, NROUNDS - 1
      ns = 0
      nr = 0
      do k = 0, nprocs - 1
        i = nprocs - 1 - k
        sc(i) = vcount(rank, i, round)
        rc(i) = vcount(i, rank, round)
        ss(i) = 1 + mod(rank + i + round, 2)
        rs(i) = 1 + mod(i + round, 2)
        st(i) = MPI_INTEGER
        rt(i) = MPI_INTEGER
        if (ss(i) == 2) st(i) = hole
        if (rs(i) == 2) rt(i) = hole
        sd(i) = ns * isz
        rd(i) = nr * isz
        ns = ns + sc(i) * ss(i) + 1
        nr = nr + rc(i) * rs(i) + 1
      end do
      allocate (s(0:ns - 1), r(0:nr - 1), covered(0:nr - 1))
      s = SENTINEL
      do i = 0, nprocs - 1
        do k = 0, sc(i) - 1
          s(sd(i) / isz + k * ss(i)) = val(rank, i, k, round)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Alltoallw(s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD, ierr)
      call check_ierr('alltoallw')
      covered = .false.
      do i = 0, nprocs - 1
        do k = 0, rc(i) - 1
          call expect(r(rd(i) / isz + k * rs(i)), val(i, rank, k, round), 'alltoallw', round, &
                      rd(i) / isz + k * rs(i))
          covered(rd(i) / isz + k * rs(i)) = .true.
        end do
      end do
      do k = 0, nr - 1
        if (.not. covered(k)) call expect(r(k), SENTINEL, 'alltoallw gap', round, k)
      end do
      deallocate (s, r, covered)
    end do
    call MPI_Type_free(hole, ierr)
    deallocate (sc, sd, rc, rd, ss, rs, st, rt)
  end subroutine test_alltoallw

  ! Neighbor i of the Cartesian communicator: 2d - 1 and 2d + 1 in MPI's order are the
  ! negative and positive neighbors in dimension d. What arrives in block i from neighbor
  ! nb(i) is what nb(i) sent in the opposite direction, its block ieor(i, 1).
  subroutine test_neighbor()
    integer, parameter :: m = 2, deg = 4
    integer :: dims(2), nb(0:deg - 1), opposite(0:deg - 1), me, round, i, k, d, extent
    integer :: s(0:31), r(0:31)
    integer :: sc(0:deg - 1), sd(0:deg - 1), rc(0:deg - 1), rd(0:deg - 1)
    integer(kind=MPI_ADDRESS_KIND) :: wsd(0:deg - 1), wrd(0:deg - 1)
#ifdef USE_MPI_F08
    type(MPI_Datatype) :: wst(0:deg - 1), wrt(0:deg - 1)
#else
    integer :: wst(0:deg - 1), wrt(0:deg - 1)
#endif
    logical :: periods(2), skip_v, skip_w
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: version
    integer :: vlen
    ! MPICH's mpi_f08 wrappers size the arrays of MPI_Neighbor_alltoallw (4.0 on) and of
    ! MPI_Neighbor_alltoallv (4.3 on: maint/local_python/binding_f08.py) with
    ! MPI_Dist_graph_neighbors_count, which aborts on this Cartesian communicator before the
    ! call reaches C. The program leaves those calls out there; CMakeLists.txt expects none.
    call MPI_Get_library_version(version, vlen, ierr)
#ifdef USE_MPI_F08
    skip_w = index(version, 'MPICH') == 1
    skip_v = skip_w .and. mpich_at_least(version, 4, 3)
#else
    skip_w = .false.
    skip_v = .false.
#endif
    dims = 0
    call MPI_Dims_create(nprocs, 2, dims, ierr)
    periods = [.true., .false.]
    call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
    call MPI_Comm_rank(cart, me, ierr)
    do d = 0, 1
      call MPI_Cart_shift(cart, d, 1, nb(2 * d), nb(2 * d + 1), ierr)
    end do
    do i = 0, deg - 1
      opposite(i) = ieor(i, 1)
    end do
    do round = 0, NROUNDS - 1
      do i = 0, deg - 1
        do k = 0, m - 1
          s(i * m + k) = val(me, i, k, round)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Neighbor_alltoall(s, m, MPI_INTEGER, r, m, MPI_INTEGER, cart, ierr)
      call check_ierr('neighbor_alltoall')
      do i = 0, deg - 1
        rc(i) = m
        rd(i) = i * m
      end do
      call check_blocks(r, rc, rd, deg, nb, opposite, round, round, &
                        'neighbor_alltoall')

      ! v: uneven counts (zeros included), sent in reverse order with gaps, received in
      ! order with gaps; 2 elements are "expected" from MPI_PROC_NULL (nothing arrives).
      if (skip_v) cycle
      do i = 0, deg - 1
        sc(i) = scount(me, i, round)
        if (nb(i) == MPI_PROC_NULL) then
          rc(i) = 2
        else
          rc(i) = scount(nb(i), opposite(i), round)
        end if
      end do
      extent = layout(sc, sd, deg, .true., 2)
      extent = layout(rc, rd, deg, .false., 1)
      s = SENTINEL
      do i = 0, deg - 1
        do k = 0, sc(i) - 1
          s(sd(i) + k) = val(me, i, k, round + NROUNDS)
        end do
      end do
      r = SENTINEL
#ifdef USE_MPI_F08
      call MPI_Neighbor_alltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, cart)
#else
      ierr = -1
      call MPI_Neighbor_alltoallv(s, sc, sd, MPI_INTEGER, r, rc, rd, MPI_INTEGER, cart, ierr)
      call check_ierr('neighbor_alltoallv')
#endif
      call check_blocks(r, rc, rd, deg, nb, opposite, round, round + NROUNDS, &
                        'neighbor_alltoallv')

      ! w: the v layout with a datatype per block and displacements in bytes (not with MPICH's
      ! mpi_f08, above).
      if (skip_w) cycle
      do i = 0, deg - 1
        wsd(i) = int(sd(i), MPI_ADDRESS_KIND) * 4
        wrd(i) = int(rd(i), MPI_ADDRESS_KIND) * 4
        wst(i) = MPI_INTEGER
        wrt(i) = MPI_INTEGER
        do k = 0, sc(i) - 1
          s(sd(i) + k) = val(me, i, k, round + 2 * NROUNDS)
        end do
      end do
      r = SENTINEL
      ierr = -1
      call MPI_Neighbor_alltoallw(s, sc, wsd, wst, r, rc, wrd, wrt, cart, ierr)
      call check_ierr('neighbor_alltoallw')
      call check_blocks(r, rc, rd, deg, nb, opposite, round, round + 2 * NROUNDS, &
                        'neighbor_alltoallw')
    end do
    call MPI_Comm_free(cart, ierr)
  end subroutine test_neighbor

  ! Whether MPI_Get_library_version's "MPICH Version:      4.3.2 ..." is major.minor or later.
  logical function mpich_at_least(version, major, minor)
    character(len=*), intent(in) :: version
    integer, intent(in) :: major, minor
    integer :: at, k, v(2)
    v = 0
    k = 1
    at = index(version, 'Version:') + len('Version:')
    do while (at <= len(version) .and. k <= 2)
      select case (version(at:at))
      case ('0':'9')
        v(k) = 10 * v(k) + (ichar(version(at:at)) - ichar('0'))
      case ('.')
        k = k + 1
      case (' ')
        if (k > 1 .or. v(1) > 0) exit
      case default
        exit
      end select
      at = at + 1
    end do
    mpich_at_least = v(1) > major .or. (v(1) == major .and. v(2) >= minor)
  end function mpich_at_least

end program preload_app
