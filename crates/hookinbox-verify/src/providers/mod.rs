//! One module per provider. Each module's docs state the headers, the signed
//! bytes, the tolerance, the event id source and its stability across
//! retries, and the provider's redelivery window.

pub mod adyen;
pub mod bitbucket;
pub mod brex;
pub mod circleci;
pub mod clerk;
pub mod discord;
pub mod generic_hmac;
pub mod github;
pub mod gitlab;
pub mod heroku;
pub mod incident_io;
pub mod intercom;
pub mod lab;
pub mod launchdarkly;
pub mod lemonsqueezy;
pub mod linear;
pub mod lithic;
pub mod liveblocks;
pub mod mailgun;
pub mod mux;
pub mod openai;
pub mod paddle;
pub mod pleo;
pub mod polar;
pub mod razorpay;
pub mod render;
pub mod replicate;
pub mod resend;
pub mod sendgrid;
pub mod sentry;
pub mod shopify;
pub mod slack;
pub mod square;
pub mod standard;
pub mod stripe;
pub mod stytch;
pub mod twilio;
pub mod twitch;
pub mod typeform;
pub mod vercel;
pub mod woocommerce;
pub mod xero;
pub mod zoom;
