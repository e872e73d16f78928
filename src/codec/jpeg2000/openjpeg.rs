//! Decoding one tile of an in-memory codestream with OpenJPEG.
//!
//! The only unsafe code of the codec: OpenJPEG objects are owned by guards
//! that free them on every path, the stream reads from a Rust slice through
//! callbacks that cannot panic, and OpenJPEG's error messages are collected
//! into the returned error instead of being printed.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::ptr;

use openjpeg_sys as opj;

/// One decoded component: `height` rows of `width` samples.
#[derive(Debug)]
pub(in crate::codec) struct Plane {
    pub(in crate::codec) width: usize,
    pub(in crate::codec) height: usize,
    pub(in crate::codec) data: Vec<i32>,
}

/// Where the stream callbacks read from.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

unsafe extern "C" fn read(buffer: *mut c_void, n: usize, user: *mut c_void) -> usize {
    // SAFETY: `user` is the Reader owned by `decode_tile`, alive for the
    // stream's life; `buffer` has room for `n` bytes.
    let reader = unsafe { &mut *user.cast::<Reader<'_>>() };
    let left = reader.data.len() - reader.at;
    if left == 0 {
        return usize::MAX; // (OPJ_SIZE_T)-1: end of stream
    }
    let n = n.min(left);
    unsafe {
        ptr::copy_nonoverlapping(reader.data.as_ptr().add(reader.at), buffer.cast(), n);
    }
    reader.at += n;
    n
}

unsafe extern "C" fn skip(n: i64, user: *mut c_void) -> i64 {
    // SAFETY: as in `read`.
    let reader = unsafe { &mut *user.cast::<Reader<'_>>() };
    let target = (reader.at as i64)
        .saturating_add(n)
        .clamp(0, reader.data.len() as i64);
    let moved = target - reader.at as i64;
    reader.at = target as usize;
    moved
}

unsafe extern "C" fn seek(to: i64, user: *mut c_void) -> i32 {
    // SAFETY: as in `read`.
    let reader = unsafe { &mut *user.cast::<Reader<'_>>() };
    if to < 0 || to as u64 > reader.data.len() as u64 {
        return 0;
    }
    reader.at = to as usize;
    1
}

unsafe extern "C" fn collect(msg: *const c_char, user: *mut c_void) {
    if msg.is_null() || user.is_null() {
        return;
    }
    // SAFETY: `user` is the String owned by `decode_tile`; `msg` a C string.
    let messages = unsafe { &mut *user.cast::<String>() };
    let text = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
    if messages.len() < 1024 {
        if !messages.is_empty() {
            messages.push_str("; ");
        }
        messages.push_str(text.trim_end());
    }
}

/// Frees the OpenJPEG objects on every path out of `decode_tile`.
struct Guard {
    codec: *mut opj::opj_codec_t,
    stream: *mut opj::opj_stream_t,
    image: *mut opj::opj_image_t,
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or owned by this guard.
        unsafe {
            if !self.image.is_null() {
                opj::opj_image_destroy(self.image);
            }
            if !self.stream.is_null() {
                opj::opj_stream_destroy(self.stream);
            }
            if !self.codec.is_null() {
                opj::opj_destroy_codec(self.codec);
            }
        }
    }
}

/// Decodes tile `tile` of the codestream `data` (main header, that tile's
/// tile-parts, EOC) at resolution reduced `reduce` times.
pub(in crate::codec) fn decode_tile(
    data: &[u8],
    tile: u32,
    reduce: u32,
) -> Result<Vec<Plane>, String> {
    let mut reader = Reader { data, at: 0 };
    let mut messages = String::new();
    let fail = |what: &str, messages: &String| {
        if messages.is_empty() {
            format!("OpenJPEG: {what} failed")
        } else {
            format!("OpenJPEG: {what} failed: {messages}")
        }
    };
    let messages_ptr: *mut String = &mut messages;
    let reader_ptr: *mut Reader<'_> = &mut reader;
    // SAFETY: the codec, stream and image are used only while alive (the
    // guard frees them last), and the callbacks' user data outlive them.
    unsafe {
        let mut guard = Guard {
            codec: opj::opj_create_decompress(opj::CODEC_FORMAT::OPJ_CODEC_J2K),
            stream: ptr::null_mut(),
            image: ptr::null_mut(),
        };
        if guard.codec.is_null() {
            return Err("OpenJPEG: cannot create a decoder".into());
        }
        opj::opj_set_error_handler(guard.codec, Some(collect), messages_ptr.cast());
        opj::opj_set_warning_handler(guard.codec, None, ptr::null_mut());
        opj::opj_set_info_handler(guard.codec, None, ptr::null_mut());
        let mut params: opj::opj_dparameters_t = std::mem::zeroed();
        opj::opj_set_default_decoder_parameters(&mut params);
        params.cp_reduce = reduce;
        if opj::opj_setup_decoder(guard.codec, &mut params) == 0 {
            return Err(fail("decoder set-up", &*messages_ptr));
        }
        guard.stream = opj::opj_stream_create(data.len().clamp(1, 1 << 20), 1);
        if guard.stream.is_null() {
            return Err("OpenJPEG: cannot create a stream".into());
        }
        opj::opj_stream_set_user_data(guard.stream, reader_ptr.cast(), None);
        opj::opj_stream_set_user_data_length(guard.stream, data.len() as u64);
        opj::opj_stream_set_read_function(guard.stream, Some(read));
        opj::opj_stream_set_skip_function(guard.stream, Some(skip));
        opj::opj_stream_set_seek_function(guard.stream, Some(seek));
        if opj::opj_read_header(guard.stream, guard.codec, &mut guard.image) == 0
            || guard.image.is_null()
        {
            return Err(fail("reading the main header", &*messages_ptr));
        }
        if opj::opj_get_decoded_tile(guard.codec, guard.stream, guard.image, tile) == 0 {
            return Err(fail("decoding the tile", &*messages_ptr));
        }
        let image = &*guard.image;
        if image.comps.is_null() {
            return Err("OpenJPEG: the decoded tile has no components".into());
        }
        let comps = std::slice::from_raw_parts(image.comps, image.numcomps as usize);
        comps
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let (w, h) = (c.w as usize, c.h as usize);
                if c.data.is_null() {
                    return Err(format!("OpenJPEG: component {i} was not decoded"));
                }
                Ok(Plane {
                    width: w,
                    height: h,
                    data: std::slice::from_raw_parts(c.data, w * h).to_vec(),
                })
            })
            .collect()
    }
}
