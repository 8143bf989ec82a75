//! CANN's public C types, with their exact layouts (`include/host/shmem_host_def.h`,
//! `include/host_device/shmem_common_types.h`), shared by this project's CANN C ABI (which
//! implements them) and the hardware backend (which passes them to CANN SHMEM); the sizes are
//! asserted here and checked from C against the headers (`conformance/cann/layout.c`).

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// `ACLSHMEM_MAX_IP_PORT_LEN`.
pub const MAX_IP_PORT_LEN: usize = 64;
/// `ACLSHMEM_UNIQUE_ID_INNER_LEN`.
pub const UNIQUE_ID_INNER_LEN: usize = 124;
/// `TEAM_CONFIG_PADDING`.
pub const TEAM_CONFIG_PADDING: usize = 48;
/// `DEFAULT_TIMEOUT` (seconds).
pub const DEFAULT_TIMEOUT: u32 = 120;

/// `aclshmem_init_optional_attr_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmem_init_optional_attr_t {
    /// `(1 << 16) + sizeof(aclshmem_init_optional_attr_t)`.
    pub version: c_int,
    /// `data_op_engine_type_t` bits.
    pub data_op_engine_type: c_int,
    /// Seconds.
    pub shm_init_timeout: u32,
    /// Seconds (never read, as in CANN).
    pub shm_create_timeout: u32,
    /// Seconds.
    pub control_operation_timeout: u32,
    /// A socket PE 0 serves on, when positive.
    pub sock_fd: i32,
}

/// `aclshmemx_init_attr_t` (120 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmemx_init_attr_t {
    /// This PE.
    pub my_pe: c_int,
    /// The PEs.
    pub n_pes: c_int,
    /// `tcp://host:port` or `tcp6://[host]:port`, NUL-terminated.
    pub ip_port: [c_char; MAX_IP_PORT_LEN],
    /// Bytes of symmetric heap.
    pub local_mem_size: u64,
    /// The optional attributes.
    pub option_attr: aclshmem_init_optional_attr_t,
    /// A unique id or an `MPI_Comm *`, by the init flags.
    pub comm_args: *mut c_void,
    /// The instance to create.
    pub instance_id: u64,
}

/// `aclshmemx_uniqueid_t` (136 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmemx_uniqueid_t {
    /// `ACLSHMEM_UNIQUEID_VERSION` (65672).
    pub version: i32,
    /// Filled by `aclshmemx_set_attr_uniqueid_args`'s caller's PE.
    pub my_pe: c_int,
    /// The PEs.
    pub n_pes: c_int,
    /// The library's own data.
    pub internal: [c_char; UNIQUE_ID_INNER_LEN],
}

/// `aclshmem_team_config_t` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmem_team_config_t {
    /// The version of the struct.
    pub version: i32,
    /// The contexts the team is configured for.
    pub num_contexts: i32,
    /// `aclshmemx_team_uniqueid_t`.
    pub uniqueid: u64,
    /// Padding to 64 bytes.
    pub padding: [c_char; TEAM_CONFIG_PADDING],
}

/// `aclshmem_instance_ctx` (its `instance` is reserved).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct aclshmem_instance_ctx {
    /// The instance id.
    pub id: u64,
    /// Reserved.
    pub instance: *mut c_void,
}

const _: () = assert!(size_of::<aclshmem_init_optional_attr_t>() == 24);
const _: () = assert!(size_of::<aclshmemx_init_attr_t>() == 120);
const _: () = assert!(std::mem::offset_of!(aclshmemx_init_attr_t, local_mem_size) == 72);
const _: () = assert!(std::mem::offset_of!(aclshmemx_init_attr_t, option_attr) == 80);
const _: () = assert!(std::mem::offset_of!(aclshmemx_init_attr_t, comm_args) == 104);
const _: () = assert!(std::mem::offset_of!(aclshmemx_init_attr_t, instance_id) == 112);
const _: () = assert!(size_of::<aclshmemx_uniqueid_t>() == 136);
const _: () = assert!(size_of::<aclshmem_team_config_t>() == 64);
const _: () = assert!(size_of::<aclshmem_instance_ctx>() == 16);
