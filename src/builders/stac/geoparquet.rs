//! STAC-GeoParquet: one row per item (`id`, `datetime`, the `assets`
//! struct with one field per asset key, the other properties as columns),
//! read whole (at most [`Limits::table_bytes`]) with the parquet crate's
//! row reader, each row made the item it stands for.

use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::{Map, Value};

use super::{base_of, Found, Hosts, Limits};
use crate::base::error::{Error, Result};
use crate::io::documents::{self, Request};

/// Columns that are no item property.
const ITEM_COLUMNS: [&str; 8] = [
    "type",
    "stac_version",
    "stac_extensions",
    "id",
    "geometry",
    "bbox",
    "links",
    "assets",
];

/// Takes the items of the STAC-GeoParquet file `source` into `found`.
pub(super) fn read(
    source: &str,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    found: &mut Found,
) -> Result<()> {
    let request = Request {
        url: source.to_string(),
        body: None,
    };
    let bytes = bytes::Bytes::from(documents::read(&request, limits.table_bytes)?);
    let bad = |e: parquet::errors::ParquetError| Error::MalformedSource {
        path: source.to_string(),
        reason: format!("not a STAC-GeoParquet table: {e}"),
    };
    let reader = SerializedFileReader::new(bytes).map_err(bad)?;
    let base = base_of(source)?;
    for row in reader.get_row_iter(None).map_err(bad)? {
        let item = item_of(row.map_err(bad)?.to_json_value());
        found.take(&item, &base, keys, hosts, limits)?;
    }
    Ok(())
}

/// The STAC item a table row (as JSON) stands for.
fn item_of(row: Value) -> Value {
    let Value::Object(mut row) = row else {
        return Value::Null;
    };
    let mut item = Map::new();
    for column in ITEM_COLUMNS {
        if let Some(v) = row.remove(column) {
            item.insert(column.into(), v);
        }
    }
    for key in ["datetime", "start_datetime", "end_datetime"] {
        if let Some(Value::String(s)) = row.get_mut(key) {
            *s = iso_timestamp(s);
        }
    }
    item.insert("properties".into(), Value::Object(row));
    Value::Object(item)
}

/// A timestamp as the parquet crate writes it (`2021-01-02 00:00:00.000000
/// +00:00`) in RFC 3339 (`2021-01-02T00:00:00Z`); other text as it is.
fn iso_timestamp(text: &str) -> String {
    let Some((date_time, "+00:00")) = text.rsplit_once(' ') else {
        return text.to_string();
    };
    let Some((date, time)) = date_time.split_once(' ') else {
        return text.to_string();
    };
    let time = time.trim_end_matches('0').trim_end_matches('.');
    format!("{date}T{time}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_become_rfc3339() {
        assert_eq!(
            iso_timestamp("2021-01-02 00:00:00.000000 +00:00"),
            "2021-01-02T00:00:00Z"
        );
        assert_eq!(
            iso_timestamp("2021-01-02 10:20:30.250000 +00:00"),
            "2021-01-02T10:20:30.25Z"
        );
        assert_eq!(
            iso_timestamp("2021-01-02T00:00:00Z"),
            "2021-01-02T00:00:00Z"
        );
    }

    #[test]
    fn rows_become_items() {
        let row = json!({"id": "a", "datetime": "2021-01-02 00:00:00.000000 +00:00",
            "eo:cloud_cover": 3, "assets": {"red": {"href": "s3://b/a.tif"}, "nir": null}});
        let item = item_of(row);
        assert_eq!(
            item["properties"]["datetime"],
            json!("2021-01-02T00:00:00Z")
        );
        assert_eq!(item["properties"]["eo:cloud_cover"], json!(3));
        assert_eq!(item["assets"]["red"]["href"], json!("s3://b/a.tif"));
    }
}
