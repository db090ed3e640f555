//! The table's names outside the items' keys: its indexes, the attributes the store and the
//! template agree on (TTL, the listing mark), and `create_table`, which builds a table from
//! the template's own definition so tests run on the table that is deployed.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;

use super::errors::{corrupt, unavailable};
use super::DynamoStore;
use crate::store::StoreError;

/// The listing index: each participant's tasks, newest status first.
pub const INDEX: &str = "gsi1";
/// The sweeper's sparse index: leased tasks by lease expiry, and tasks waiting on a
/// wake-up by when it was rung.
pub const SWEEP_INDEX: &str = "gsi2";
pub(super) const LEASED: &str = "LEASED";
/// The sweep index's partition of tasks last written as a wake-up, by when.
pub(super) const WOKEN: &str = "WOKEN";
pub const TTL_ATTRIBUTE: &str = "expires_at";
/// A head's mark that the listing index holds its members.
pub(super) const LISTED: &str = "listed";
/// On a head: 1 when an event of the task was stored in more than one item, 0 when none
/// was (absent on heads written before it was kept).
pub(super) const EVENTS_CHUNKED: &str = "ev_chunked";

impl DynamoStore {
    /// Creates a table from the `Properties` of an `AWS::DynamoDB::Table` resource (the
    /// one `template.yaml` declares, as JSON): keys, attribute definitions, global
    /// indexes, billing mode, stream and TTL. For tests and local DynamoDB servers, so they
    /// run on exactly the table that is deployed.
    pub async fn create_table(
        client: &Client,
        table: &str,
        properties: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let bad = |what: &str| corrupt(format!("table definition: {what}"));
        let list =
            |v: &serde_json::Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
        let text = |v: &serde_json::Value, key: &str| {
            v[key].as_str().map(str::to_owned).ok_or_else(|| bad(key))
        };
        let keys = |v: &serde_json::Value| {
            list(v, "KeySchema")
                .iter()
                .map(|k| {
                    KeySchemaElement::builder()
                        .attribute_name(text(k, "AttributeName")?)
                        .key_type(KeyType::from(text(k, "KeyType")?.as_str()))
                        .build()
                        .map_err(corrupt)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let attributes = list(properties, "AttributeDefinitions")
            .iter()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(text(a, "AttributeName")?)
                    .attribute_type(ScalarAttributeType::from(
                        text(a, "AttributeType")?.as_str(),
                    ))
                    .build()
                    .map_err(corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let indexes = list(properties, "GlobalSecondaryIndexes")
            .iter()
            .map(|g| {
                let projection = g["Projection"]["ProjectionType"].as_str().unwrap_or("ALL");
                GlobalSecondaryIndex::builder()
                    .index_name(text(g, "IndexName")?)
                    .set_key_schema(Some(keys(g)?))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::from(projection))
                            .build(),
                    )
                    .build()
                    .map_err(corrupt)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let stream = properties["StreamSpecification"]["StreamViewType"]
            .as_str()
            .map(|view| {
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::from(view))
                    .build()
            });
        client
            .create_table()
            .table_name(table)
            .billing_mode(BillingMode::from(
                properties["BillingMode"]
                    .as_str()
                    .unwrap_or("PAY_PER_REQUEST"),
            ))
            .set_attribute_definitions(Some(attributes))
            .set_key_schema(Some(keys(properties)?))
            .set_global_secondary_indexes((!indexes.is_empty()).then_some(indexes))
            .set_stream_specification(stream.transpose().map_err(corrupt)?)
            .send()
            .await
            .map_err(unavailable)?;
        let ttl = &properties["TimeToLiveSpecification"];
        if let (Some(attribute), Some(true)) =
            (ttl["AttributeName"].as_str(), ttl["Enabled"].as_bool())
        {
            client
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .attribute_name(attribute)
                        .enabled(true)
                        .build()
                        .map_err(corrupt)?,
                )
                .send()
                .await
                .map_err(unavailable)?;
        }
        Ok(())
    }
}
