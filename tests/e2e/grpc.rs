//! The gRPC binding end to end (issue 49): a tonic client on harness-local's listener.

use harness_e2e::grpc::{self, pb, Code};
use harness_e2e::Server;

#[tokio::test]
async fn a_send_over_grpc_is_a_task_the_json_bindings_read() {
    let server = Server::start().await;
    let mut client = server.grpc().await;
    let message = pb::Message {
        message_id: harness_e2e::unique("m"),
        role: pb::Role::User.into(),
        parts: vec![pb::Part {
            content: Some(pb::part::Content::Text("hello".into())),
            ..Default::default()
        }],
        ..Default::default()
    };
    let send = pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    };
    let reply = client
        .send_message(grpc::request(send, "alice"))
        .await
        .expect("sent")
        .into_inner();
    let Some(pb::send_message_response::Payload::Task(task)) = reply.payload else {
        panic!("a task: {reply:?}");
    };
    let got = client
        .get_task(grpc::request(
            pb::GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
            "bob",
        ))
        .await
        .expect_err("bob is no member");
    grpc::assert_status(&got, Code::NotFound, "TASK_NOT_FOUND");
}
