//! Whether the exec stage is statically linked, before it is handed to a
//! container with its own image.
//!
//! The kernel loads a dynamic executable's interpreter (`PT_INTERP`, e.g.
//! `/lib64/ld-linux-x86-64.so.2`) from the root of the process that calls
//! `execve`. Mesos' helper runs the stage after `pivot_root` into the image,
//! so a dynamically linked stage would start the image's loader, a file the
//! tenant chose, as root with every capability, before any defence. Only a
//! binary without `PT_INTERP` is handed over. Read with the `object` crate
//! (ELF headers only, no section data).

use std::os::fd::AsFd;

use object::read::elf::{FileHeader, ProgramHeader};

/// How much of the file is read: the ELF header and program headers sit at
/// its start (`e_phoff` is 64 for every linker we know).
const HEAD: usize = 64 * 1024;

/// Whether the ELF file open at `fd` has no interpreter; an error when it
/// is not a 64-bit ELF file or cannot be read.
pub fn statically_linked(fd: impl AsFd) -> Result<bool, String> {
    let mut head = vec![0u8; HEAD];
    let mut filled = 0;
    while filled < HEAD {
        let n = nix::sys::uio::pread(&fd, &mut head[filled..], filled as i64)
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    head.truncate(filled);
    has_no_interpreter(&head)
}

fn has_no_interpreter(data: &[u8]) -> Result<bool, String> {
    let header = object::elf::FileHeader64::<object::Endianness>::parse(data)
        .map_err(|e| format!("not a 64-bit ELF file: {e}"))?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let headers = header
        .program_headers(endian, data)
        .map_err(|e| format!("ELF program headers: {e}"))?;
    Ok(!headers
        .iter()
        .any(|p| p.p_type(endian) == object::elf::PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(path: &std::path::Path) -> Result<bool, String> {
        statically_linked(std::fs::File::open(path).unwrap())
    }

    #[test]
    fn a_dynamic_binary_is_told_from_a_static_one() {
        // This test binary: dynamically linked (cargo's default).
        assert_eq!(of(&std::env::current_exe().unwrap()), Ok(false));
        let busybox = std::path::Path::new("/bin/busybox");
        if busybox.exists() {
            assert_eq!(of(busybox), Ok(true), "busybox-static is static");
        }
        let text = std::env::temp_dir().join(format!("ng-elf-{}", std::process::id()));
        std::fs::write(&text, "#!/bin/sh\nexit 0\n").unwrap();
        assert!(of(&text).unwrap_err().contains("not a 64-bit ELF"));
        std::fs::remove_file(&text).unwrap();
        assert!(has_no_interpreter(&[]).is_err());
    }
}
