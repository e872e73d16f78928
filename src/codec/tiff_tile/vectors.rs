//! Tiles written by GDAL 3.6.2 (libtiff 4.5.0), decoded and compared with
//! what GDAL reads.
//!
//! Made by a throwaway script (not in the repository): for each case a MEM
//! dataset of the `pattern` below was copied to GTiff with the creation
//! options its name gives (`TILED=YES BLOCKXSIZE=16 BLOCKYSIZE=16`, or strips
//! with `BLOCKYSIZE`), one block's bytes cut out of the file at the band's
//! `BLOCK_OFFSET_x_y` / `BLOCK_SIZE_x_y` (`TIFF` metadata domain), the TIFF
//! tags 259, 258, 277, 262, 284, 317, 322/323 (or 256/278), 339 and 347 read
//! from the first IFD into `config`, and the block read back with
//! `ReadAsArray` (rows past the image zero). For lossless cases the script
//! checked that GDAL reads back the pattern, which the test recomputes; for
//! the others `expected` holds GDAL's result, base64 of the band-major block
//! in the file's byte order.

use base64::Engine;
use bytes::Bytes;

use super::from_config;
use crate::base::dtype::{ByteOrder, DataType};
use crate::base::error::Result;
use crate::codec::DecodeContext;

/// One block of a GDAL-written GeoTIFF.
struct Vector<'a> {
    name: &'a str,
    /// The codec configuration, built from the file's tags.
    config: &'a str,
    dtype: &'a str,
    /// The chunk: samples, rows, columns.
    shape: [usize; 3],
    /// Image column and row of the block's first pixel.
    origin: (usize, usize),
    /// Rows of the block inside the image.
    rows: usize,
    /// Band of the chunk's first sample (planar files hold one band a tile).
    first_sample: usize,
    /// The generator of the written pixels, see [`pattern`].
    pattern: &'a str,
    /// The stored block, base64.
    tile: &'a str,
    /// What GDAL reads, base64, when it is not the written pattern.
    expected: Option<&'a str>,
}

const VECTORS: &[Vector<'static>] = &[
    Vector {
        name: "lzw_rgb_pred2",
        config: r#"{"compression": 5, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 2, "planar_config": 1, "predictor": 2, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: "|u1",
        shape: [3, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "u8",
        tile: r"gAAGRkA8Fg0HhEJhULhgNH5xBERiUTikVi0RfsZi8TDRMPwJkEhkUjf0lkcnBMlf0okYnLKLBUxmUyf81mc3mr/m
4KnM7mk1GhmTALolFAFHotGpFJBdHAFKp9Mp1FIJzUoMrFZANbrVcrFbANdsNfr1ZBlgrJOQCyBttAVvtoNt4CuN
zutwt1zvFyvdzLaNX4OwQDwmCB2ExADw2JwuDxmLxuHwhoTTMB+XAmZzWXB+az2Zzmfz2hz+cOqnbIQ1QF1mt12s
1QQ1+z12x2msQS0cwR3gG32/4HB4XD328CPEAyPYLzhnN53PgycZwAjfV60ZfvWBCpbYNlkolXfkPh8QJWzoDU+m
M99Xsmfunc5Yb1E9MptLpNTqX4/X5/CAgA==",
        expected: None,
    },
    Vector {
        name: "deflate_u16_be_pred2",
        config: r#"{"compression": 8, "bits_per_sample": 16, "samples_per_pixel": 1, "photometric": 1, "planar_config": 1, "predictor": 2, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: ">u2",
        shape: [1, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "u16",
        tile: r"eJxjYODeiQ+yvuXehRfe4t6NDwoe596DD4pv4d6LD8ou5N6HDyr3ce/HBzWruQ/ghPHcB/QzuA/igAkg0jSU+xAW
mAhjWTtxH8aASQi2oz73ETSYjMxzl+E+igZTkHm+nNzHUGAqKi/oG/dxJJiGzot4zH0CCaajswGXvMUU",
        expected: None,
    },
    Vector {
        name: "zstd_f32_pred3",
        config: r#"{"compression": 50000, "bits_per_sample": 32, "samples_per_pixel": 1, "photometric": 1, "planar_config": 1, "predictor": 3, "tile_width": 16, "tile_height": 16, "sample_format": 3, "jpeg_tables": null}"#,
        dtype: "<f4",
        shape: [1, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "f32",
        tile: r"KLUv/QBgvQUAtAbBADP+KgATSvNq0/z8/Pz8lKf81AD/aPj4+Pj4KMAQ+PDQAMAA/0I+AQAAAOHw8ODg4ODAwICA
gIBAQCBgAD8AAYAgIBAIWABAAW8IBOwAQdcErAAXAgICAgJ2SwJWAGs2ixYBqgEBAQEB+y+gYZRYCu6fAXCDaTGN
3RLSZaRT5MQhC3FvP0Asgspnp+wKZZrWkF4d6PrDMcmLO7fcgtDMztvbKgNFkI/RBtEOotdxQCAiK3sp",
        expected: None,
    },
    Vector {
        name: "lzma_f64_be",
        config: r#"{"compression": 34925, "bits_per_sample": 64, "samples_per_pixel": 1, "photometric": 1, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 3, "jpeg_tables": null}"#,
        dtype: ">f8",
        shape: [1, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "f64",
        tile: r"/Td6WFoAAAD/EtlBAgEDAQAhARZ5IMTu4Af/AdddAGAz0mnlHpRW7rVuROofnae9xTHQnQikuUMtRc/u7QE5M8j4
MAq/ReyOUS20BNpMBFPkXTv8WMP74zTWWlAY4PFeEJ671wzXMQt6EzCvcuZLHrxooyP39mYeHvlMGKzef0qUhVLX
GCMS49LCzn/RyNQD+afLivSEgY4yVR6obhfmR909/VKnheAoOUmn8iKkXyihfOoGVTb2M/sRklaLqhxXuMtVq8Lr
jzLLWYFu7/gYOCb1IuufpJDxC5EFCCoSXY8MD6GNHDwMGWp8et+i3+OZvEmjZEWLUaMOK2qhvZiuKujsgjBcd0Z5
62HouIO5vJzbfS8J6nPmJCXvgAXh4AJqFQj66tAUGQXp9GVMguVojfc1M+2N8TYX8Ff7pNUsZFEsKf3fXTopwupj
0iFAkcDEmEH4dw2AzEFpoRYewwKkQHW6lNPwSoaoVN8GarO3p8bb2qWnFmr4HpsjarVgftntQtW3jZhwBgWs2ktn
8MMrDGNoc8qMFQEKH2QcEZBtRgerw/6chjFtCqX8pkfC8cJnMRDfINxvWbWLv5y4y1SOjAGCQJXFz3TLnSvWIkHo
cZOEzhblUCmp58jXeyJbrwdzEJujspEJrX3uxd0+q9pYEuH4mghsQAAAAAHrA4AQAAAHUAkJqAAK/AIAAAAAAFla",
        expected: None,
    },
    Vector {
        name: "deflate_f64_be_pred3_chunky",
        config: r#"{"compression": 8, "bits_per_sample": 64, "samples_per_pixel": 2, "photometric": 1, "planar_config": 1, "predictor": 3, "tile_width": 16, "tile_height": 16, "sample_format": 3, "jpeg_tables": null}"#,
        dtype: ">f8",
        shape: [2, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "f64",
        tile: r"eJzVzzEVwjAARdFOxUFxUGbKOcVBcVBQUFBQUFBQUFAQHAQHwUFwEByEMawchsfK//N/w83+fE2TcJs19/Mqk15d
s3+35V7dX5bsP+y5V/cXBftPR+7V/XnO/sv5853Sd18tMunFyP6r4V7dHwL7b5Z7db/37L877tX9zrH/4blX91vL
/mfgXt1vDPtfkXt1/ziyf5Jzr+4fBvZPC+7V/X3P/lnJvbq/69i/rLlX97ct+1cN97/8b2+IBh8=",
        expected: Some(
            r"AAAAAABGj8AAAAAAAEWPwAAAAAAARI/AAAAAAABDj8AAAAAAAEKPwAAAAAAAQY/AAAAAAABAj8AAAAAAAD+PwAAA
AAAAPo/AAAAAAAA9j8AAAAAAADyPwAAAAAAAO4/AAAAAAAA6j8AAAAAAADmPwAAAAAAAOI/AAAAAAAA3j8AAAAAA
ADaPwAAAAAAANY/AAAAAAAA0j8AAAAAAADOPwAAAAAAAMo/AAAAAAAAxj8AAAAAAADCPwAAAAAAAL4/AAAAAAAAu
j8AAAAAAAC2PwAAAAAAALI/AAAAAAAArj8AAAAAAACqPwAAAAAAAKY/AAAAAAAAoj8AAAAAAACePwAAAAAAAJo/A
AAAAAAAlj8AAAAAAACSPwAAAAAAAI4/AAAAAAAAij8AAAAAAACGPwAAAAAAAII/AAAAAAAAfj8AAAAAAAB6PwAAA
AAAAHY/AAAAAAAAcj8AAAAAAABuPwAAAAAAAGo/AAAAAAAAZj8AAAAAAABiPwAAAAAAAF4/AAAAAAAAWj8AAAAAA
ABWPwAAAAAAAFI/AAAAAAAATj8AAAAAAABKPwAAAAAAAEY/AAAAAAAAQj8AAAAAAAA+PwAAAAAAADo/AAAAAAAAN
j8AAAAAAAAyPwAAAAAAAC4/AAAAAAAAKj8AAAAAAAAmPwAAAAAAACI/AAAAAAAAHj8AAAAAAAAaPwAAAAAAABY/A
AAAAAAAEj8AAAAAAAAOPwAAAAAAAAo/AAAAAAAABj8AAAAAAAACPwAAAAAAA/47AAAAAAAD+jsAAAAAAAP2OwAAA
AAAA/I7AAAAAAAD7jsAAAAAAAPqOwAAAAAAA+Y7AAAAAAAD4jsAAAAAAAPeOwAAAAAAA9o7AAAAAAAD1jsAAAAAA
APSOwAAAAAAA847AAAAAAADyjsAAAAAAAPGOwAAAAAAA8I7AAAAAAADvjsAAAAAAAO6OwAAAAAAA7Y7AAAAAAADs
jsAAAAAAAOuOwAAAAAAA6o7AAAAAAADpjsAAAAAAAOiOwAAAAAAA547AAAAAAADmjsAAAAAAAOWOwAAAAAAA5I7A
AAAAAADjjsAAAAAAAOKOwAAAAAAA4Y7AAAAAAADgjsAAAAAAAN+OwAAAAAAA3o7AAAAAAADdjsAAAAAAANyOwAAA
AAAA247AAAAAAADajsAAAAAAANmOwAAAAAAA2I7AAAAAAADXjsAAAAAAANaOwAAAAAAA1Y7AAAAAAADUjsAAAAAA
ANOOwAAAAAAA0o7AAAAAAADRjsAAAAAAANCOwAAAAAAAz47AAAAAAADOjsAAAAAAAM2OwAAAAAAAzI7AAAAAAADL
jsAAAAAAAMqOwAAAAAAAyY7AAAAAAADIjsAAAAAAAMeOwAAAAAAAxo7AAAAAAADFjsAAAAAAAMSOwAAAAAAAw47A
AAAAAADCjsAAAAAAAMGOwAAAAAAAwI7AAAAAAAC/jsAAAAAAAL6OwAAAAAAAvY7AAAAAAAC8jsAAAAAAALuOwAAA
AAAAuo7AAAAAAAC5jsAAAAAAALiOwAAAAAAAt47AAAAAAAC2jsAAAAAAALWOwAAAAAAAtI7AAAAAAACzjsAAAAAA
ALKOwAAAAAAAsY7AAAAAAACwjsAAAAAAAK+OwAAAAAAAro7AAAAAAACtjsAAAAAAAKyOwAAAAAAAq47AAAAAAACq
jsAAAAAAAKmOwAAAAAAAqI7AAAAAAACnjsAAAAAAAKaOwAAAAAAApY7AAAAAAACkjsAAAAAAAKOOwAAAAAAAoo7A
AAAAAAChjsAAAAAAAKCOwAAAAAAAn47AAAAAAACejsAAAAAAAJ2OwAAAAAAAnI7AAAAAAACbjsAAAAAAAJqOwAAA
AAAAmY7AAAAAAACYjsAAAAAAAJeOwAAAAAAAlo7AAAAAAACVjsAAAAAAAJSOwAAAAAAAk47AAAAAAACSjsAAAAAA
AJGOwAAAAAAAkI7AAAAAAACPjsAAAAAAAI6OwAAAAAAAjY7AAAAAAACMjsAAAAAAAIuOwAAAAAAAio7AAAAAAACJ
jsAAAAAAAIiOwAAAAAAAh47AAAAAAACGjsAAAAAAAIWOwAAAAAAAhI7AAAAAAACDjsAAAAAAAIKOwAAAAAAAgY7A
AAAAAACAjsAAAAAAAH+OwAAAAAAAfo7AAAAAAAB9jsAAAAAAAHyOwAAAAAAAe47AAAAAAAB6jsAAAAAAAHmOwAAA
AAAAeI7AAAAAAAB3jsAAAAAAAHaOwAAAAAAAdY7AAAAAAAB0jsAAAAAAAHOOwAAAAAAAco7AAAAAAABxjsAAAAAA
AHCOwAAAAAAAb47AAAAAAABujsAAAAAAAG2OwAAAAAAAbI7AAAAAAABrjsAAAAAAAGqOwAAAAAAAaY7AAAAAAABo
jsAAAAAAAGeOwAAAAAAAZo7AAAAAAABljsAAAAAAAGSOwAAAAAAAY47AAAAAAABijsAAAAAAAGGOwAAAAAAAYI7A
AAAAAABfjsAAAAAAAF6OwAAAAAAAXY7AAAAAAABcjsAAAAAAAFuOwAAAAAAAWo7AAAAAAABZjsAAAAAAAFiOwAAA
AAAAV47AAAAAAABWjsAAAAAAAFWOwAAAAAAAVI7AAAAAAABTjsAAAAAAAFKOwAAAAAAAUY7AAAAAAABQjsAAAAAA
AE+OwAAAAAAATo7AAAAAAABNjsAAAAAAAEyOwAAAAAAAS47AAAAAAABKjsAAAAAAAEmOwAAAAAAASI7AAAAAAABH
jsAAAAAAAEaOwAAAAAAARY7AAAAAAABEjsAAAAAAAEOOwAAAAAAAQo7AAAAAAABBjsAAAAAAAECOwAAAAAAAP47A
AAAAAAA+jsAAAAAAAD2OwAAAAAAAPI7AAAAAAAA7jsAAAAAAADqOwAAAAAAAOY7AAAAAAAA4jsAAAAAAADeOwAAA
AAAANo7AAAAAAAA1jsAAAAAAADSOwAAAAAAAM47AAAAAAAAyjsAAAAAAADGOwAAAAAAAMI7AAAAAAAAvjsAAAAAA
AC6OwAAAAAAALY7AAAAAAAAsjsAAAAAAACuOwAAAAAAAKo7AAAAAAAApjsAAAAAAACiOwAAAAAAAJ47AAAAAAAAm
jsAAAAAAACWOwAAAAAAAJI7AAAAAAAAjjsAAAAAAACKOwAAAAAAAIY7AAAAAAAAgjsAAAAAAAB+OwAAAAAAAHo7A
AAAAAAAdjsAAAAAAAByOwAAAAAAAG47AAAAAAAAajsAAAAAAABmOwAAAAAAAGI7AAAAAAAAXjsAAAAAAABaOwAAA
AAAAFY7AAAAAAAAUjsAAAAAAABOOwAAAAAAAEo7AAAAAAAARjsAAAAAAABCOwAAAAAAAD47AAAAAAAAOjsAAAAAA
AA2OwAAAAAAADI7AAAAAAAALjsAAAAAAAAqOwAAAAAAACY7AAAAAAAAIjsAAAAAAAAeOwAAAAAAABo7AAAAAAAAF
jsAAAAAAAASOwAAAAAAAA47AAAAAAAACjsAAAAAAAAGOwAAAAAAAAI7AAAAAAAD/jcAAAAAAAP6NwAAAAAAA/Y3A
AAAAAAD8jcAAAAAAAPuNwAAAAAAA+o3AAAAAAAD5jcAAAAAAAPiNwAAAAAAA943AAAAAAAD2jcAAAAAAAPWNwAAA
AAAA9I3AAAAAAADzjcAAAAAAAPKNwAAAAAAA8Y3AAAAAAADwjcAAAAAAAO+NwAAAAAAA7o3AAAAAAADtjcAAAAAA
AOyNwAAAAAAA643AAAAAAADqjcAAAAAAAOmNwAAAAAAA6I3AAAAAAADnjcAAAAAAAOaNwAAAAAAA5Y3AAAAAAADk
jcAAAAAAAOONwAAAAAAA4o3AAAAAAADhjcAAAAAAAOCNwAAAAAAA343AAAAAAADejcAAAAAAAN2NwAAAAAAA3I3A
AAAAAADbjcAAAAAAANqNwAAAAAAA2Y3AAAAAAADYjcAAAAAAANeNwAAAAAAA1o3AAAAAAADVjcAAAAAAANSNwAAA
AAAA043AAAAAAADSjcAAAAAAANGNwAAAAAAA0I3AAAAAAADPjcAAAAAAAM6NwAAAAAAAzY3AAAAAAADMjcAAAAAA
AMuNwAAAAAAAyo3AAAAAAADJjcAAAAAAAMiNwAAAAAAAx43AAAAAAADGjcAAAAAAAMWNwAAAAAAAxI3AAAAAAADD
jcAAAAAAAMKNwAAAAAAAwY3AAAAAAADAjcAAAAAAAL+NwAAAAAAAvo3AAAAAAAC9jcAAAAAAALyNwAAAAAAAu43A
AAAAAAC6jcAAAAAAALmNwAAAAAAAuI3AAAAAAAC3jcAAAAAAALaNwAAAAAAAtY3AAAAAAAC0jcAAAAAAALONwAAA
AAAAso3AAAAAAACxjcAAAAAAALCNwAAAAAAAr43AAAAAAACujcAAAAAAAK2NwAAAAAAArI3AAAAAAACrjcAAAAAA
AKqNwAAAAAAAqY3AAAAAAACojcAAAAAAAKeNwAAAAAAApo3AAAAAAACljcAAAAAAAKSNwAAAAAAAo43AAAAAAACi
jcAAAAAAAKGNwAAAAAAAoI3AAAAAAACfjcAAAAAAAJ6NwAAAAAAAnY3AAAAAAACcjcAAAAAAAJuNwAAAAAAAmo3A
AAAAAACZjcAAAAAAAJiNwAAAAAAAl43AAAAAAACWjcAAAAAAAJWNwAAAAAAAlI3AAAAAAACTjcAAAAAAAJKNwAAA
AAAAkY3AAAAAAACQjcAAAAAAAI+NwAAAAAAAjo3AAAAAAACNjcAAAAAAAIyNwAAAAAAAi43AAAAAAACKjcAAAAAA
AImNwAAAAAAAiI3AAAAAAACHjcAAAAAAAIaNwAAAAAAAhY3AAAAAAACEjcAAAAAAAIONwAAAAAAAgo3AAAAAAACB
jcAAAAAAAICNwAAAAAAAf43AAAAAAAB+jcAAAAAAAH2NwAAAAAAAfI3AAAAAAAB7jcAAAAAAAHqNwAAAAAAAeY3A
AAAAAAB4jcAAAAAAAHeNwAAAAAAAdo3AAAAAAAB1jcAAAAAAAHSNwAAAAAAAc43AAAAAAAByjcAAAAAAAHGNwAAA
AAAAcI3AAAAAAABvjcAAAAAAAG6NwAAAAAAAbY3AAAAAAABsjcAAAAAAAGuNwAAAAAAAao3AAAAAAABpjcAAAAAA
AGiNwAAAAAAAZ43AAAAAAABmjcAAAAAAAGWNwAAAAAAAZI3AAAAAAABjjcAAAAAAAGKNwAAAAAAAYY3AAAAAAABg
jcAAAAAAAF+NwAAAAAAAXo3AAAAAAABdjcAAAAAAAFyNwAAAAAAAW43AAAAAAABajcAAAAAAAFmNwAAAAAAAWI3A
AAAAAABXjcAAAAAAAFaNwAAAAAAAVY3AAAAAAABUjcAAAAAAAFONwAAAAAAAUo3AAAAAAABRjcAAAAAAAFCNwAAA
AAAAT43AAAAAAABOjcAAAAAAAE2NwAAAAAAATI3AAAAAAABLjcAAAAAAAEqNwAAAAAAASY3AAAAAAABIjcAAAAAA
AEeNwA==",
        ),
    },
    Vector {
        name: "lzw_u16_rgb_pred2",
        config: r#"{"compression": 5, "bits_per_sample": 16, "samples_per_pixel": 3, "photometric": 1, "planar_config": 1, "predictor": 2, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: "<u2",
        shape: [3, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "u16",
        tile: r"gAAAAQE4gJy5BcIhUJhkLh0NiEPiURikTi0VjDtAr9FgNKi6BcgkUhkkjk0llEnlUplkrl0tmDaBbqGT6LK7Bc4n
U5nk7n09oE/oVBolDo1FpDHCLXHDnL68BdQqVRqlTq1VrFXrVZrlbr1dsC0C7EHzUMq9BdotVptlrt1tuFvuVxul
zu11vChDqxIjBNa+BeAwWBwmDw2FxGHxWJxmLx2NyCOEaeJSuOK/BeYzWZzmbz2d0Gf0Wh0mj02l1B7FKLKCbO7A
Bew2Wx2mz2213G33W53m7324L4L4PB25oF54KyIPrBBfM53N6HP6XR6nT63V7HX65gBfc7na6BVGplLh1QbCBfo9
Xp9nr93t+Hv+Xx+nrMIL+/3+f7+hCHYpDEMREmGBcCQNAsEQPBUEwZBcHQbBgxAXCUJQfC0IQWF4gh+NAnkeYgFx
BEUQxJEcTRLFETxVFAxgXFsWxXGMUxnE4OCOFg3B4SpigXHkfR7IEfyFIMiSHI0iDIBckyTI8myLJ8hgSJoMjoFJ
NmMBcsS1LMuS3L0uzBL8vjKBcyTJMUwzTNE0TNMoFnsKQDD0CxQmOBc7TxO89TzPk9z9PozAXQNAz7Qs/0PQ07UH
QVDnGLB5j+AZTmQBdKUtStMUvTVM05TYzgXT9P03UdO1LS9Q1BU1OICA",
        expected: None,
    },
    Vector {
        name: "packbits_i16_planar_strip",
        config: r#"{"compression": 32773, "bits_per_sample": 16, "samples_per_pixel": 2, "photometric": 1, "planar_config": 2, "predictor": 1, "tile_width": 16, "tile_height": 8, "sample_format": 2, "jpeg_tables": null}"#,
        dtype: "<i2",
        shape: [1, 8, 16],
        origin: (0, 16),
        rows: 4,
        first_sample: 1,
        pattern: "i16",
        tile: r"H/jTJtVU1oLXqdjX2QXbLNxa3Yjett/d4AviOeNg5I7lH/PRItNR1HnVqNbQ1//YJ9pW24Xcrd3c3gTgM+Fb4orj
H+7PHtFH0nfToNTQ1fnWIthS2Xvaq9vU3ATeLd9W4IbhH+nNGs9E0G7Rn9LJ0/PUHdZO13jYotnT2v3bJ91R3oLf",
        expected: None,
    },
    Vector {
        name: "none_u16_rgb_be_strip",
        config: r#"{"compression": 1, "bits_per_sample": 16, "samples_per_pixel": 3, "photometric": 1, "planar_config": 1, "predictor": 1, "tile_width": 4, "tile_height": 4, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: ">u2",
        shape: [3, 4, 4],
        origin: (0, 8),
        rows: 2,
        first_sample: 0,
        pattern: "u16",
        tile: r"L2hWeH2IOyliOYlJRupt+pUKUqt5u6DLNVVcZYN1QRdoJ483TNlz6Zr5WJt/q6a7",
        expected: None,
    },
    Vector {
        name: "jpeg_ycbcr",
        config: r#"{"compression": 7, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 6, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": "/9j/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/2Q=="}"#,
        dtype: "|u1",
        shape: [3, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "smooth",
        tile: r"/9j/wAARCAAQABADASIAAhEBAxEB/8QAFgABAQEAAAAAAAAAAAAAAAAABwIG/8QAIRAAAAMJAQEAAAAAAAAAAAAA
ABESAQIEBRMVIYHxFDL/xAAUAQEAAAAAAAAAAAAAAAAAAAAF/8QAGBEAAgMAAAAAAAAAAAAAAAAAAAECAxH/2gAM
AwEAAhEDEQA/AKkkNb04qL0RdCPJYa3sdxUXoi6MhJIa3pxUXoi6ESUQvhdYz7Xoi6FbHkQtH//Z",
        expected: Some(
            r"JjE+P25vfIdwfImKubnFzy00PkJwdH+Gd3+Jjbu+x84sMj1Icn2IjnZ8iJO9x9HWNjxIVGx4g4qAh5Oft8LM0k5V
XmRgZm93mKCpr6uwuL9XYGlwWmFqc6GqtLulq7O7V15ndlxqdHuhqLLBprS9w11gZ3leb3d6p6uyxKi5v8I+SVZX
hoeUn4iToKHQztXdRUxWWoiMl56QlqCk0dHW2URKVWCKlaCmkJSeqNHY3t9OVGBshJCbopmeqbTM1dzfZm12fHh+
h4+wtr7FwsfN0m94gYhyeYKLucDJ0bzDy9Jvdn+OdIKMk7m+x9a9y9PYdXh/kXaHj5LBwsfYvc7T1FFcaGmUlaKt
laGvsN3e6vVYX2hslpqlrJykr7Pf4+z0V11ncpijrrSboa664uz3/GFncn6Snqmwpay5xtzn8vh5gIiOhoyVnb3G
z9bQ1t7lgoqTmoCHkJrG0NriytHZ4oGIkaCCkJqixs7Z6Mva5OqHipGjhJWdoczR2ezO3+bpaHOAgaytusatucfJ
9vX8/292gISusr3FtbzHzPf4/v9udH+KsLvHzba6xdD3////eH6Klqq2wsm/xNDd8vz//5CXoKaepK621tzl7unv
9fuZoquymJ+pst/n8frj6/P7maCpuJqos7rf5e//5PP8/5+iqbucrba55+nv/+T2/P10f5CRwcLR2sLL1tT9+f//
e4KQlMPH1NnJztbX//7//3qAj5rF0N3hyMvT2/////+Eipqmv8vY3dHW3uf5////nKOwtrO5wsrp7fP16+3z+KWw
u8KttL3F8vf+/+Xo7POnrrnIr73HzfL1+v/l7/X5rbC5y7HCysz29vr/5fL3+I6ZqKnZ2ufx197o4/////+VnKiu
29/q8N/g5uX/////lpyptN3o8vbd3uTp/////6CmtMDX4+3y5ujt8/////+4v8rQy9HZ3/3////6+/3/wcrV3MXM
1Nv/////9PX7/8HI0+LH1d7j//////X9///HytPlydrh4v/////1////",
        ),
    },
    Vector {
        name: "jpeg_rgb",
        config: r#"{"compression": 7, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 2, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": "/9j/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2Q=="}"#,
        dtype: "|u1",
        shape: [3, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "smooth",
        tile: r"/9j/wAARCAAQABADUhEARxEAQhEA/8QAFwABAQEBAAAAAAAAAAAAAAAABgcEBf/EACUQAAEBCAIBBQAAAAAAAAAA
ABESAAQFExUhgfEBAxQCIjFBYf/aAAwDUgBHAEIAAD8A4EEdqem0xeANtpgjtT02mLwBtmMEdqem0xeANtSII7U9
Npi8AbakQR2p6bTF4A21Ahzn4fUlSlcH4AG2HwR2p6bTF4A2w+CO1PTaYvAG2LwR2p6bTF4A21IgjtT02mLwBtqN
B3TwfRxxx75n2ABtmLv0cdHWjjk/ob//2Q==",
        expected: Some(
            r"JzI/QG1ue4ZveoeItbbDzi41P0Nvc36Fdn2Hi7e7xs0tMz5JcXyHjXV7hpG5xM/VNz1JVWt3gol/hZGds7/K0U9W
X2VfZW52l56nraettr5YYWpxWWBpcqCpsrmhqLG6WF9od1tpc3qgp7C/o7G7wl5haHpdbnZ5pqmwwqW2vsE/SldY
hYaTnoeSn6DNztvmRk1XW4eLlp2OlZ+jz9Pe5UVLVmGJlJ+ljZOeqdHc5+1PVWFtg4+aoZedqbXL1+LpZ253fXd9
ho6vtr/Fv8XO1nB5golxeIGKuMHK0bnAydJwd4CPc4GLkri/yNe7ydPadnmAknWGjpG+wcjavc7W2U9aZ2iVlqOu
l6KvsN3e6/ZWXWdrl5umrZ6lr7Pf4+71VVtmcZmkr7Wdo6654ez3/V9lcX2Tn6qxp625xdvn8vl3foeNh42Wnr/G
z9XP1d7mgImSmYGIkZrI0drhydDZ4oCHkJ+DkZuiyM/Y58vZ4+qGiZCihZaeoc7R2OrN3ubpZ3J/gK2uu8avt8LE
9fX8/251f4Ovs77FuL3Hzfv7/v9tc36JsbzHzbS5xdL6////d32Jlau3wsm+xM/c8vr//4+Wn6Wfpa622uHp7+nu
9PqYoaqxmaCpsuLq8vnh6fP8mJ+ot5ups7rc5O/94e/5/56hqLqdrra54+nz/+f3/P53go+Qvb7L1rzI19n/+Pv/
foWPk7/DztXHztnc//z8/X2DjpnBzNfdxMrT3P7///6HjZmlu8fS2czT3eX5////n6avta+1vsbn8Pj79vz++6ix
usGpsLnC7/r///D8//yor7jHq7nDyu32+//s///+rrG4yq2+xsn3/P3/7P//+I+ap6jV1uPu2eDq9Pv+/v6Wnaer
19vm7dvj7vn/////lZumsdnk7/Xd5O/6///+/J+lsb3T3+rx6Oz0+////fy3vsfNx83W3vv8/f//////wMnS2cHI
0dr////+/v///8DH0N/D0dvi//79/f39/v/GydDixdbe4f7/////////",
        ),
    },
    Vector {
        name: "jpeg_gray",
        config: r#"{"compression": 7, "bits_per_sample": 8, "samples_per_pixel": 1, "photometric": 1, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": "/9j/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2Q=="}"#,
        dtype: "|u1",
        shape: [1, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "smooth",
        tile: r"/9j/wAALCAAQABABAREA/8QAFgABAQEAAAAAAAAAAAAAAAAABwUG/8QAHRAAAAUFAAAAAAAAAAAAAAAAAAQFERIT
FSGB8f/aAAgBAQAAPwCAiFrfHFSemboSEQtb44qT0zdGPRC1vjipPTN0JCIWt8cVJ6Zuj//Z",
        expected: Some(
            r"JzI/QG1ue4ZveoeItbbDzi41P0Nvc36Fdn2Hi7e7xs0tMz5JcXyHjXV7hpG5xM/VNz1JVWt3gol/hZGds7/K0U9W
X2VfZW52l56nraettr5YYWpxWWBpcqCpsrmhqLG6WF9od1tpc3qgp7C/o7G7wl5haHpdbnZ5pqmwwqW2vsE/SldY
hYaTnoeSn6DNztvmRk1XW4eLlp2OlZ+jz9Pe5UVLVmGJlJ+ljZOeqdHc5+1PVWFtg4+aoZedqbXL1+LpZ253fXd9
ho6vtr/Fv8XO1nB5golxeIGKuMHK0bnAydJwd4CPc4GLkri/yNe7ydPadnmAknWGjpG+wcjavc7W2Q==",
        ),
    },
    Vector {
        name: "webp_lossy",
        config: r#"{"compression": 50001, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 2, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: "|u1",
        shape: [3, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "smooth",
        tile: r"UklGRlQAAABXRUJQVlA4IEgAAADQAQCdASoQABAAAgA0JZgCdLoANtQAAAD+6eV9wVJDN65dxSAWJpZy1nMo+bcQ
CNBzL7lo86oAJ5/alK+++bVD8VvqBj0AAAA=",
        expected: Some(
            r"KzI7QmlweoFwd4GIr7bAxy41PkVtdH2EdHuEi7O6w8ozOkNKcnmCiXmAiZC3vsjPNj1HTnV8hYx8g4yTu8LL0lNa
ZGtZYGlwnaSttKKpsrlXXmduXWRtdKGosbilrLa9XGJsc2FocnmlrLa9qrG6wV9mb3ZlbHV8qbC5wK20vsVBSFFY
hYyVnIyTnKPQ09jbREtVXIiPmJ+Plp+m0NPY20lQWWCNlJ2klJukq9DT2NtMU11kkJehqJeeqLDQ09jYbHN8g3R7
hYy1vMXMusHK1W92gId4f4iPuL/J0L3EztV0e4SLfYSNlL3EzdTCydLZd36Ij4CHkJfBx9HYxs3W3VJZYmmRmKGo
l56osNjg6vFVXGZtlJukq5qiq7Pc4+30WmFqcZmgqbCfprC44Ojy+V1kbnWco6yzoqq0u+Tr9f17gYuSgIeQl8HI
0trI0NrhfoWOlYSLlJvFzNbdzNPd5IOKk5qIj5ifydDa49HY4umGjZadjJOco83U3ubV3efuaG94f6mwusCwt8HK
9vv//2tyfIOttL3Es7vFzvb7//9wd4CHsrnByLnAytL2+///dHuEi7W8xcy8xM7V9vr//5Oao6qZoKmx2ODq8t7l
7/mWnaeunaSttdzk7vbh6PL5m6KrsqGpsrrh6fP65uz1/J+mr7alrLa+5e32/unw+f95gImQuL/K0cPIz9L2+f//
fIONlLvCztXGy9PW+fz//4GIkZjAx9LZy9DX2v7///+FjJWcw8rW3c7T297/////oqmyuaeuusHu8/r95unx9qWs
tbyrsr3E8fb+/+jt9PmqsbrBsLfCyfb9///r8Pf+rbS+xbO6xcz6////7O30+4+Wn6bR2OLr3OPn5v////+TmqOq
1dzl7uDl6Of////+l56nrtrh7PPh5uvs/////5uiq7Ld5O304uXq7f////+6wcrRwcjR1vr9///v9Pz/vsXO1cXM
09j7/v//9fr//8LJ09rJztba/v////n////GzdbdzdLZ3P//////////",
        ),
    },
    Vector {
        name: "webp_lossless_rgba",
        config: r#"{"compression": 50001, "bits_per_sample": 8, "samples_per_pixel": 4, "photometric": 2, "planar_config": 1, "predictor": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1, "jpeg_tables": null}"#,
        dtype: "|u1",
        shape: [4, 16, 16],
        origin: (0, 0),
        rows: 16,
        first_sample: 0,
        pattern: "u8",
        tile: r"UklGRr4AAABXRUJQVlA4TLEAAAAvD8ADEM2UIaL/sYmI/ofGcSRJjnKH1hoMwX+32C/ilB908JuINgL1VfUY55Fh
G0mSk5rXWgAegZPpgkVNwP6nT2w6pedQMyEyaAFlKpATW8x3iZjQSHw5BnIuUIBM4r070QDkAEj8TpQcKgNltBZy
YlsWyApy7JR1AFlURs7I2TLCKhzRjBY5NwgjoAuwRkFRANcVAKFC6QxUoLQP7ABRNQTNgcqAmz5GZQoYIyOsggwA",
        expected: Some(
            r"AAcOFRwjKjE4P0ZNVFtiaQ0VHSUtNT1FTVVdWmJpcnoaIyw1PkdFTldgaWdweYKLJzE7RUROWGJha3V0foiSkTQ/
SkpVYGBrdnaBgYyXl6JBTVlaZmdzdICBjY6apqezTltdXmx5e4iKl5mbqKq3uVtpbHp9gI6RlKKlqLa5x8pod3t/
jpKWmqmtsbXEyMzbdYWKj5SZqa6zuL3C0tfc4YKTmZ+lq7G3vcPJz+Dm7PKPlp2kq7K5wMfO1dzj6vH4nKSstLzE
zNTc5Ozp8fkBCamyu8TN1tTd5u/49v8IERq2wMrU093n8fD6BAMNFyEgw87Z2eTv7/oFBRAQGyYmMTI5QEdOVVxj
anF4f4aNlJs/R09XX2dvd3+Hj4yUm6SsTFVeZ3B5d4CJkpuZoqu0vVljbXd2gIqUk52nprC6xMNmcXx8h5KSnaio
s7O+ycnUc3+LjJiZpaays7/AzNjZ5YCNj5Ceq626vMnLzdrc6euNm56sr7LAw8bU19ro6/n8mqmtscDEyMzb3+Pn
9vr+Dae3vMHGy9vg5erv9AQJDhO0xcvR193j6e/1+wESGB4kwcjP1t3k6/L5AAcOFRwjKs7W3ubu9v4GDhYeGyMr
Mzvb5O32/wgGDxghKigxOkNM6PL8BgUPGSMiLDY1P0lTUvUACwsWISEsNzdCQk1YWGNka3J5gIeOlZyjqrG4v8bN
cXmBiZGZoamxucG+xs3W3n6HkJmiq6myu8TNy9Td5u+LlZ+pqLK8xsXP2dji7Pb1mKOurrnExM/a2uXl8Pv7BqWx
vb7Ky9fY5OXx8v4KCxeyv8HC0N3f7O77/f8MDhsdv83Q3uHk8vX4BgkMGh0rLszb3+Py9vr+DREVGSgsMD/Z6e7z
+P0NEhccISY2O0BF5vf9AwkPFRshJy0zREpQVvP6AQgPFh0kKzI5QEdOVVwACBAYICgwOEBIUE1VXWVtDRYfKDE6
OEFKU1xaY2x1fhokLjg3QUtVVF5oZ3F7hYQnMj09SFNTXmlpdHR/ioqVlp2kq7K5wMfO1dzj6vH4/6Ors7vDy9Pb
4+vz8PgACBCwucLL1N3b5O32//0GDxghvcfR29rk7vj3AQsKFB4oJ8rV4ODr9vYBDAwXFyItLTjX4+/w/P0JChYX
IyQwPD1J5PHzAAIPER4gLS8xPkBNT/H/AhATFiQnKjg7PkxPXWD+DREVJCgsMD9DR0taXmJxCxsgJSovP0RJTlNY
aG1ydxgpLzU7QUdNU1lfZXZ8goglLDM6QUhPVl1ka3J5gIeOMjpCSlJaYmpyeoJ/h4+Xnz9IUVpjbGpzfIWOjJWe
p7BMVmBqaXN9h4aQmpmjrbe2WWRvb3qFhZCbm6amsby8xw==",
        ),
    },
];

fn base64(text: &str) -> Vec<u8> {
    let text: String = text.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("test vector is base64")
}

/// The value the generator wrote at sample `s`, row `y`, column `x` of the
/// image, as bytes of `dtype`.
fn pattern(kind: &str, dtype: DataType, s: usize, y: usize, x: usize) -> Vec<u8> {
    let (s, y, x) = (s as i64, y as i64, x as i64);
    let big = dtype.order == ByteOrder::Big;
    macro_rules! bytes {
        ($v:expr) => {
            if big {
                $v.to_be_bytes().to_vec()
            } else {
                $v.to_le_bytes().to_vec()
            }
        };
    }
    let index = (x + y * 16 + s * 256) as f64;
    match kind {
        "u8" => vec![((x * 7 + y * 13 + s * 50 + (x * y) % 11) % 256) as u8],
        "i16" => bytes!((x * 300 - y * 517 + s * 1000 + (x * y) % 7 - 4000) as i16),
        "u16" => bytes!(((x * 3001 + y * 1517 + s * 10000 + (x * y) % 97) % 65536) as u16),
        "f32" => bytes!((index * 0.25 - 30.5) as f32),
        "f64" => bytes!(index * 0.125 - 1000.75),
        other => panic!("no pattern {other}"),
    }
}

/// The chunk GDAL reads for `vector`.
fn expected(vector: &Vector<'_>, dtype: DataType) -> Vec<u8> {
    if let Some(text) = vector.expected {
        return base64(text);
    }
    let [samples, height, width] = vector.shape;
    let (x0, y0) = vector.origin;
    let mut out = Vec::new();
    for s in 0..samples {
        for y in 0..height {
            for x in 0..width {
                if y < vector.rows {
                    let sample = vector.first_sample + s;
                    out.extend(pattern(vector.pattern, dtype, sample, y0 + y, x0 + x));
                } else {
                    out.extend(vec![0; dtype.size]);
                }
            }
        }
    }
    out
}

/// Decodes `vector`'s tile, from `tile` bytes (possibly altered).
fn decode(vector: &Vector<'_>, tile: Vec<u8>) -> Result<Bytes> {
    let dtype = DataType::from_v2(vector.dtype).unwrap();
    let shape = vector.shape.map(|n| n as u64);
    let ctx = DecodeContext {
        chunk_shape: &shape,
        chunk_index: &[],
        dtype,
        decoded_len: vector.shape.iter().product::<usize>() * dtype.size,
        needed: vector.shape.iter().product::<usize>() * dtype.size,
        first_needed: 0,
    };
    let config = serde_json::from_str(vector.config).unwrap();
    from_config(&config)?.decode(Bytes::from(tile), &ctx)
}

/// Largest difference allowed from GDAL's result. jpeg-decoder's IDCT and
/// chroma upsampling round differently from libjpeg-turbo: measured at most
/// 2 for the 4:2:0 YCbCr tile and 1 for the RGB and grey ones. image-webp
/// matched libwebp exactly, lossy and lossless.
fn tolerance(name: &str) -> u8 {
    if name.starts_with("jpeg") {
        2
    } else {
        0
    }
}

#[test]
fn gdal_tiles_decode_like_gdal() {
    for vector in VECTORS {
        let dtype = DataType::from_v2(vector.dtype).unwrap();
        let got =
            decode(vector, base64(vector.tile)).unwrap_or_else(|e| panic!("{}: {e}", vector.name));
        let want = expected(vector, dtype);
        assert_eq!(got.len(), want.len(), "{}", vector.name);
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap_or(0);
        eprintln!("{}: max abs difference {worst}", vector.name);
        assert!(
            worst <= tolerance(vector.name),
            "{}: differs from GDAL by up to {worst}",
            vector.name
        );
    }
}

#[test]
fn corrupted_gdal_tiles_never_panic() {
    let mut random = crate::codec::testing::xorshift(0x853c_49e6_748f_ea9b);
    let mut next = move || random() as usize;
    for vector in VECTORS {
        let valid = base64(vector.tile);
        for round in 0..200 {
            let mut tile = valid.clone();
            for _ in 0..=(round % 3) {
                let at = next() % tile.len();
                tile[at] = next() as u8;
            }
            if round % 4 == 0 {
                tile.truncate(next() % (valid.len() + 1));
            }
            let _ = decode(vector, tile);
        }
    }
}

#[test]
fn webp_rgb_tiles_get_opaque_alpha_when_four_samples_are_asked() {
    let rgb = VECTORS.iter().find(|v| v.name == "webp_lossy").unwrap();
    let config = rgb
        .config
        .replace(r#""samples_per_pixel": 3"#, r#""samples_per_pixel": 4"#);
    let rgba = Vector {
        config: &config,
        shape: [4, 16, 16],
        ..*rgb
    };
    let got = decode(&rgba, base64(rgb.tile)).unwrap();
    let want = base64(rgb.expected.unwrap());
    assert_eq!(&got[..want.len()], &want[..]);
    assert!(got[want.len()..].iter().all(|&alpha| alpha == u8::MAX));
}
