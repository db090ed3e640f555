//! GetExtendedAgentCard: this server publishes no extended card, so the card does not
//! claim the capability and the operation is unsupported (spec §3.5).

use super::Harness;
use crate::a2a::{A2aError, AgentCard, GetExtendedAgentCardRequest};

pub async fn get_extended_agent_card(
    h: &Harness,
    _req: GetExtendedAgentCardRequest,
) -> Result<AgentCard, A2aError> {
    if h.card.card.capabilities.extended_agent_card != Some(true) {
        return Err(A2aError::UnsupportedOperation(
            "This agent has no extended agent card (capabilities.extendedAgentCard is not set)"
                .into(),
        ));
    }
    Err(A2aError::ExtendedAgentCardNotConfigured)
}
